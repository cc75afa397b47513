import jwt from 'jsonwebtoken';
import type { Settings } from '../config/settings.js';
import { secretKey } from './verification-keys.js';

/** Signs an access token for a session (secret mode only; in JWKS mode the identity provider signs). */
export function signAccessToken(
  settings: Settings,
  session: { user_id: number; id: string; expires_at: Date },
): string {
  if (settings.jwtSecret === undefined) throw new Error('tokens can only be issued in secret mode (JWT_SECRET)');
  const payload = {
    sub: String(session.user_id),
    sid: session.id,
    exp: Math.floor(session.expires_at.getTime() / 1000),
  };
  return jwt.sign(payload, secretKey(settings.jwtSecret), {
    algorithm: 'HS256',
    issuer: settings.jwtIssuer,
    audience: settings.jwtAudience,
  });
}
