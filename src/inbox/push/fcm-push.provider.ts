import { createPrivateKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import jwt from 'jsonwebtoken';
import { SettingsError } from '../../platform/config/settings.js';
import type { PushMessage, PushOutcome, PushProvider } from './push-provider.js';

/** The fields of a Google service-account key that FCM HTTP v1 needs. */
interface ServiceAccount {
  readonly project_id: string;
  readonly client_email: string;
  readonly private_key: string;
  readonly token_uri: string;
}

const SCOPE = 'https://www.googleapis.com/auth/firebase.messaging';
const TIMEOUT_MS = 10_000;

/** FCM_CREDENTIALS is the service-account JSON itself or a path to it; checked at start-up. */
export function parseFcmCredentials(raw: string): ServiceAccount {
  let text = raw.trim();
  if (!text.startsWith('{')) {
    try {
      text = readFileSync(text, 'utf8');
    } catch {
      throw new SettingsError('FCM_CREDENTIALS', `is neither service-account JSON nor a readable file (${raw})`);
    }
  }
  let parsed: Partial<ServiceAccount>;
  try {
    parsed = JSON.parse(text) as Partial<ServiceAccount>;
  } catch {
    throw new SettingsError('FCM_CREDENTIALS', 'is not valid JSON');
  }
  for (const field of ['project_id', 'client_email', 'private_key'] as const) {
    if (typeof parsed[field] !== 'string' || parsed[field] === '')
      throw new SettingsError('FCM_CREDENTIALS', `lacks ${field}`);
  }
  return { ...(parsed as ServiceAccount), token_uri: parsed.token_uri ?? 'https://oauth2.googleapis.com/token' };
}

interface FcmErrorBody {
  error?: { status?: string; message?: string; details?: { errorCode?: string }[] };
}

/**
 * FCM HTTP v1: an OAuth2 access token from the service account (JWT bearer grant, cached until
 * shortly before it expires), then `POST {FCM_ENDPOINT}/v1/projects/{project}/messages:send`.
 */
export class FcmPushProvider implements PushProvider {
  readonly name = 'fcm' as const;
  private readonly key: KeyObject;
  private accessToken: { value: string; until: number } | undefined;

  constructor(
    private readonly account: ServiceAccount,
    private readonly endpoint: string,
  ) {
    try {
      this.key = createPrivateKey(account.private_key);
    } catch {
      throw new SettingsError('FCM_CREDENTIALS', 'has a private_key that is not a PEM private key');
    }
  }

  async send(message: PushMessage): Promise<PushOutcome> {
    let token: string;
    try {
      token = await this.token();
    } catch (error) {
      return {
        kind: 'retryable',
        error: `could not get an access token: ${error instanceof Error ? error.message : String(error)}`,
      };
    }
    const url = `${this.endpoint.replace(/\/$/, '')}/v1/projects/${encodeURIComponent(this.account.project_id)}/messages:send`;
    let response: Response;
    try {
      response = await fetch(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          message: {
            token: message.token,
            notification: { title: message.title, body: message.body },
            data: message.data,
          },
        }),
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
    } catch (error) {
      return { kind: 'retryable', error: error instanceof Error ? error.message : String(error) };
    }
    if (response.ok) return { kind: 'sent' };
    return this.outcomeOf(response.status, (await response.json().catch(() => ({}))) as FcmErrorBody);
  }

  private outcomeOf(status: number, body: FcmErrorBody): PushOutcome {
    const code =
      body.error?.details?.find((detail) => detail.errorCode !== undefined)?.errorCode ??
      body.error?.status ??
      `HTTP ${status}`;
    const error = `${code}: ${body.error?.message ?? 'no message'}`;
    if (code === 'UNREGISTERED' || (status === 404 && code === 'NOT_FOUND')) return { kind: 'unregistered', error };
    if (status === 401) this.accessToken = undefined;
    if (status === 429 || status === 401 || status >= 500 || code === 'UNAVAILABLE' || code === 'INTERNAL')
      return { kind: 'retryable', error };
    return { kind: 'failed', error };
  }

  private async token(): Promise<string> {
    if (this.accessToken !== undefined && this.accessToken.until > Date.now()) return this.accessToken.value;
    const now = Math.floor(Date.now() / 1000);
    const assertion = jwt.sign(
      { iss: this.account.client_email, scope: SCOPE, aud: this.account.token_uri, iat: now, exp: now + 3600 },
      this.key,
      { algorithm: 'RS256' },
    );
    const response = await fetch(this.account.token_uri, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion }),
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
    if (!response.ok) throw new Error(`token endpoint answered ${response.status}`);
    const body = (await response.json()) as { access_token?: string; expires_in?: number };
    if (typeof body.access_token !== 'string') throw new Error('token endpoint sent no access_token');
    // Renew a minute early so a token never expires in flight.
    this.accessToken = { value: body.access_token, until: Date.now() + ((body.expires_in ?? 3600) - 60) * 1000 };
    return body.access_token;
  }
}
