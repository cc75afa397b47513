import { Inject, Injectable } from '@nestjs/common';
import type { KeyObject } from 'node:crypto';
import jwt, { type JwtPayload, type VerifyOptions } from 'jsonwebtoken';
import { SETTINGS, type Settings } from '../config/settings.js';
import { ApiError } from '../http/api-error.js';
import { VerifiedTokens } from './verified-tokens.js';
import { VERIFICATION_KEYS, type VerificationKeys } from './verification-keys.js';

/** What a valid token says about its caller; the session and the user are checked afterwards. */
export interface VerifiedToken {
  readonly user_id: number;
  readonly session_id: string;
}

const USER_ID = /^[1-9]\d{0,15}$/;

function invalid(reason: string, details: Record<string, unknown> = {}): ApiError {
  return new ApiError('AUTH_TOKEN_INVALID', 'The token is not valid', { reason, ...details });
}

function missing(): ApiError {
  return new ApiError('AUTH_TOKEN_MISSING', 'A bearer token is required in the Authorization header');
}

function claimMissing(claim: string): ApiError {
  return new ApiError('AUTH_TOKEN_INVALID', `The token lacks a valid "${claim}" claim`, {
    reason: 'missing_claim',
    claim,
  });
}

/**
 * The token of an `Authorization` header (part 4): exactly `Bearer`, one space, and the token.
 * Another scheme, or a bearer header with no token at all, is a missing token; a bearer header in
 * any other form (another case, a tab, two spaces, trailing text) is an invalid one.
 */
export function bearerToken(header: string | undefined): string {
  if (header === undefined || !/^bearer(\s|$)/i.test(header)) throw missing();
  if (/^bearer\s*$/i.test(header)) throw missing();
  if (!/^Bearer [^\s]+$/.test(header)) throw invalid('malformed_authorization_header');
  return header.slice('Bearer '.length);
}

/** A verification or key failure as the contract's 401 (a key provider's own ApiError stands). */
function tokenError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof jwt.TokenExpiredError)
    return new ApiError('AUTH_TOKEN_EXPIRED', 'The token has expired; get a new one');
  return invalid(error instanceof Error ? error.message : String(error));
}

function claims(payload: JwtPayload): VerifiedToken {
  const sub: unknown = payload.sub;
  const userId =
    typeof sub === 'string' && USER_ID.test(sub)
      ? Number(sub)
      : typeof sub === 'number' && Number.isSafeInteger(sub) && sub > 0
        ? sub
        : undefined;
  if (userId === undefined) throw claimMissing('sub');
  const sid: unknown = payload.sid;
  if (typeof sid !== 'string' || sid === '') throw claimMissing('sid');
  if (typeof payload.exp !== 'number' || !Number.isFinite(payload.exp)) throw claimMissing('exp');
  return { user_id: userId, session_id: sid };
}

/**
 * Verifies bearer tokens: pinned algorithms, issuer and audience, `jsonwebtoken` handed a
 * `KeyObject` (ARCHITECTURE.md's trap), the key from the configured mode (secret or JWKS), and
 * each token's signature checked once per instance (`VerifiedTokens`). The guard calls it; no
 * framework strategy sits between them, so nothing of a library has to be patched to memoize.
 */
@Injectable()
export class TokenVerifier {
  private readonly verified = new VerifiedTokens();
  private readonly options: VerifyOptions;

  constructor(
    @Inject(SETTINGS) settings: Settings,
    @Inject(VERIFICATION_KEYS) private readonly keys: VerificationKeys,
  ) {
    this.options = {
      algorithms: [...keys.algorithms],
      issuer: settings.jwtIssuer,
      audience: settings.jwtAudience,
    };
  }

  /** The caller named by an `Authorization` header, or the contract's 401 (`ApiError`). */
  async verify(authorization: string | undefined): Promise<VerifiedToken> {
    const token = bearerToken(authorization);
    let key: KeyObject;
    try {
      key = await this.keys.keyFor(token);
    } catch (error) {
      throw tokenError(error);
    }
    return claims(this.verified.get(token, key) ?? this.verifyOnce(token, key));
  }

  private verifyOnce(token: string, key: KeyObject): JwtPayload {
    let verified: jwt.Jwt;
    try {
      // Decoding happens inside: a token whose parts do not parse is a 401 like any bad token.
      verified = jwt.verify(token, key, { ...this.options, complete: true });
    } catch (error) {
      throw tokenError(error);
    }
    // RFC 7515 §4.1.11: extensions we do not understand must not be ignored, so none is accepted.
    if ((verified.header as { crit?: unknown }).crit !== undefined) throw invalid('crit_header_unsupported');
    const payload = verified.payload;
    if (typeof payload === 'string') throw invalid('payload_not_an_object');
    this.verified.remember(token, key, payload);
    return payload;
  }
}
