import { Inject, Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import type { Algorithm, JwtPayload } from 'jsonwebtoken';
import passport from 'passport';
import { ExtractJwt, Strategy } from 'passport-jwt';
import { ApiError } from '../common/api-error.js';
import { SETTINGS, type Settings } from '../config/settings.js';
import type { AuthContext } from './auth-context.js';
import { ActorRateLimiter } from './actor-rate-limiter.js';
import { AuthContextService } from './auth-context.service.js';
import { VerifiedTokens } from './verified-tokens.js';
import { VERIFICATION_KEYS, type VerificationKeys } from './verification-keys.js';

const USER_ID = /^[1-9]\d{0,15}$/;

function claimMissing(claim: string): ApiError {
  return new ApiError('AUTH_TOKEN_INVALID', `The token lacks a valid "${claim}" claim`, {
    reason: 'missing_claim',
    claim,
  });
}

/**
 * passport-jwt with pinned algorithms, issuer and audience; the token is read from the
 * Authorization header only (never the query string). `validate` adds the session check.
 */
@Injectable()
export class JwtStrategy extends PassportStrategy(Strategy, 'jwt') {
  constructor(
    @Inject(SETTINGS) settings: Settings,
    @Inject(VERIFICATION_KEYS) keys: VerificationKeys,
    private readonly contexts: AuthContextService,
    private readonly rateLimiter: ActorRateLimiter,
  ) {
    super({
      jwtFromRequest: ExtractJwt.fromAuthHeaderAsBearerToken(),
      // jsonwebtoken accepts a KeyObject (fast); the typings only admit string | Buffer.
      secretOrKeyProvider: (
        _request: unknown,
        token: string,
        done: (error: unknown, key?: string | Buffer) => void,
      ) => {
        keys.keyFor(token).then(
          (key) => done(null, key as unknown as Buffer),
          (error: unknown) => done(error),
        );
      },
      algorithms: [...keys.algorithms] as Algorithm[],
      issuer: settings.jwtIssuer,
      audience: settings.jwtAudience,
      ignoreExpiration: false,
    });
    // passport-jwt keeps its verify options on the instance: the cache of verified tokens hangs on them.
    new VerifiedTokens().attach((this as unknown as { _verifOpts: object })._verifOpts);
  }

  async validate(payload: JwtPayload): Promise<AuthContext> {
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
    if (typeof payload.exp !== 'number') throw claimMissing('exp');
    const context = await this.contexts.resolve(userId, sid);
    const limited = this.rateLimiter.hit(userId);
    if (limited !== undefined) throw limited;
    return context;
  }

  /**
   * The mixin registers the strategy on the instance returned here; handing it a throw-away one
   * keeps passport's global registry out of it (tests run several apps in one process). The
   * guard registers the strategy on its own instance.
   */
  getPassportInstance(): passport.Authenticator {
    return new passport.Passport();
  }
}
