/** One push to one device. */
export interface PushMessage {
  readonly token: string;
  readonly title: string;
  readonly body: string;
  /** String key/values delivered with the notification (FCM requires strings). */
  readonly data: Readonly<Record<string, string>>;
}

/**
 * What the provider said: delivered; the token is dead (the device is deactivated); failed for
 * good; or failed for now (the job retries it with backoff).
 */
export type PushOutcome =
  | { readonly kind: 'sent' }
  | { readonly kind: 'unregistered'; readonly error: string }
  | { readonly kind: 'failed'; readonly error: string }
  | { readonly kind: 'retryable'; readonly error: string };

/** The provider behind `PUSH_PROVIDER`. */
export interface PushProvider {
  readonly name: 'log' | 'fcm';
  send(message: PushMessage): Promise<PushOutcome>;
}

export const PUSH_PROVIDER = Symbol('PUSH_PROVIDER');

/** `log`: delivers nothing; every attempt is recorded in `push_deliveries` by the worker. */
export class LogPushProvider implements PushProvider {
  readonly name = 'log' as const;

  send(): Promise<PushOutcome> {
    return Promise.resolve({ kind: 'sent' });
  }
}
