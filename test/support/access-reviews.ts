import type { components } from '../client/api.js';

/** An item of an access review as the API answers it (the committed client types of openapi.json). */
export type ReviewItem = components['schemas']['AccessReviewItemDto'];
/** A campaign as the API answers it. */
export type Review = components['schemas']['AccessReviewDto'];
