import { Injectable } from '@nestjs/common';
import { ApiError } from '../platform/http/api-error.js';
import type { Subject } from '../platform/auth/auth-context.js';
import { permissionDenied } from '../platform/auth/access-evaluator.js';
import { AccessUses } from './access-uses.js';
import { AccessFactsRepository } from './access-facts.repository.js';
import {
  accessPaths,
  admissible,
  decisionOf,
  devicePaths,
  globalDecision,
  globalPaths,
  heldBy,
  type AccessPath,
} from './access-rules.js';
import type { AuthorityFacts } from '../platform/auth/authority-facts.js';
import type { Decision } from '../platform/auth/decision.js';
import { DeviceAuthoritiesService } from './device-authorities.service.js';
import {
  isDeviceScoped,
  isPermissionCode,
  PERMISSION_CODES,
  type PermissionCode,
} from '../platform/auth/permissions.js';

const DEVICE_SCOPED_CODES = PERMISSION_CODES.filter((code) => isDeviceScoped(code));

/** 403 for handing on a right the actor does not itself hold (part 5, delegation). */
export function delegationForbidden(permission: string, deviceId?: number): ApiError {
  const where = deviceId === undefined ? '' : ` on device ${deviceId}`;
  return new ApiError('DELEGATION_FORBIDDEN', `You cannot hand on ${permission}${where}: you do not hold it yourself`, {
    permission,
    ...(deviceId === undefined ? {} : { device_id: deviceId }),
  });
}

/** The subject's authorities on the device among those its auth context carries (its own and its groups'). */
function carriedOn(subject: Subject, deviceId: number): AuthorityFacts[] {
  return subject.authorities?.filter((candidate) => candidate.device_id === deviceId) ?? [];
}

/**
 * The authorities read as the subject holds them (its own, and its groups' already as the member's,
 * with `via` and the chain's expiry, which the rules judge at the moment asked).
 */
function heldNow(subject: Subject, authorities: readonly AuthorityFacts[]): AuthorityFacts[] {
  return authorities.filter((authority) => authority.user_id === subject.user_id);
}

/** One question for `decideMany`: may the subject do `permission` on `device_id`? */
export interface DeviceQuestion {
  readonly permission: string;
  readonly device_id: number;
}

/**
 * The authorization evaluator of part 5 on the live state (cached projections), the one code
 * path behind the guard, list row filtering, bulk per-item checks and `/authz/check`: admin
 * access (layer 2), then the role's permissions (3a), an effective permission grant (3b), and for
 * device-scoped permissions an effective authority on the device that is the owner or holds the
 * permission (3c). The rules themselves are `access-rules.ts`, shared with the point-in-time
 * questions.
 */
@Injectable()
export class AuthorizationService {
  constructor(
    private readonly devices: DeviceAuthoritiesService,
    private readonly facts: AccessFactsRepository,
    private readonly uses: AccessUses,
  ) {}

  /**
   * A request's own permission, everywhere (layers 2, 3a, 3b), as the guard and the answers sent
   * before the handler decide it: an allowing grant's use is noted (part 6.16).
   */
  admitGlobally(subject: Subject, permission: PermissionCode): Decision {
    const decision = this.decideGlobally(subject, permission);
    this.uses.note(subject, decision, permission);
    return decision;
  }

  /** A request's own permission on its device, after `admitGlobally` refused: 403, or the use of its path noted. */
  async admitOnDevice(subject: Subject, permission: PermissionCode, deviceId: number): Promise<void> {
    const decision = await this.decide(subject, permission, deviceId);
    if (!decision.allowed) throw permissionDenied(permission, deviceId);
    this.uses.note(subject, decision, permission);
  }

  /** Layer 3c from the authorities the subject's context carries alone (no round trip); the use noted when it allows. */
  admitFromContext(subject: Subject, permission: PermissionCode, deviceId: number): boolean {
    if (!isDeviceScoped(permission) || !admissible(subject)) return false;
    const [way] = devicePaths(heldNow(subject, carriedOn(subject, deviceId)), permission, Date.now());
    if (way === undefined) return false;
    this.uses.note(subject, decisionOf([way]), permission);
    return true;
  }

  hasAdminAccess(subject: Pick<Subject, 'role'>): boolean {
    return subject.role.admin_access;
  }

  /** Layers 2, 3a and 3b: what the subject may do everywhere. */
  decideGlobally(subject: Subject, permission: PermissionCode, now = Date.now()): Decision {
    return globalDecision(subject, permission, now);
  }

  async decide(subject: Subject, permission: PermissionCode, deviceId?: number): Promise<Decision> {
    const now = Date.now();
    const global = this.decideGlobally(subject, permission, now);
    if (global.allowed || deviceId === undefined || !isDeviceScoped(permission) || !admissible(subject)) return global;
    // The authorities the context carries allow at once (no round trip: an operator's everyday
    // read); a refusal is asked again of the device's set, so a context built before an authority
    // was added costs a round trip, never a wrong 403.
    const [way] = devicePaths(heldNow(subject, carriedOn(subject, deviceId)), permission, now);
    if (way !== undefined) return decisionOf([way]);
    return decisionOf(accessPaths(subject, await this.authoritiesOn(subject, deviceId), permission, now));
  }

  /** Every way the subject is allowed the permission now (on the device), for `explain=true`. */
  async explain(subject: Subject, permission: PermissionCode, deviceId?: number): Promise<AccessPath[]> {
    const authorities =
      deviceId === undefined || !isDeviceScoped(permission) ? undefined : await this.authoritiesOn(subject, deviceId);
    return accessPaths(subject, authorities, permission, Date.now());
  }

  /** The subject's authorities on the device (its own, its groups'), from the device's cached authority set. */
  private async authoritiesOn(subject: Subject, deviceId: number): Promise<AuthorityFacts[]> {
    return heldBy(subject, await this.devices.forDevice(deviceId), Date.now());
  }

  /** The check a service makes for its route's permission on a device it knows (`check: 'service'`); the use is noted. */
  async assertAllowed(subject: Subject, permission: PermissionCode, deviceId?: number): Promise<void> {
    const decision = await this.decide(subject, permission, deviceId);
    if (!decision.allowed) throw permissionDenied(permission, deviceId);
    this.uses.note(subject, decision, permission);
  }

  /**
   * Delegation (part 5): handing on `permission` (on `deviceId`, when device-scoped) needs the
   * actor itself to be allowed it by any of the three layers; 403 `DELEGATION_FORBIDDEN` otherwise.
   */
  async assertMayDelegate(subject: Subject, permission: string, deviceId?: number): Promise<void> {
    await this.delegationLimit(subject, permission, deviceId);
  }

  /**
   * Delegation with its end (part 5, v1.3): what the actor hands on lasts no longer than its own
   * way to the permission. The instant its last way ends (a grant, an authority, an authority
   * permission or a group membership that expires), or null when one of them does not end (a
   * role, a right without expiry); 403 `DELEGATION_FORBIDDEN` when it has none.
   */
  async delegationLimit(subject: Subject, permission: string, deviceId?: number): Promise<Date | null> {
    const device = isDeviceScoped(permission) ? deviceId : undefined;
    const paths = isPermissionCode(permission) ? await this.explain(subject, permission, device) : [];
    const limit = lastEnd(paths);
    if (limit === undefined) throw delegationForbidden(permission, device);
    return limit;
  }

  /**
   * `delegationLimit` for many (permission, device) questions at once (a bulk grant): one query
   * over the subject's authorities on the devices asked about; undefined where it holds nothing.
   */
  async delegationLimits(subject: Subject, questions: readonly DeviceQuestion[]): Promise<(Date | null | undefined)[]> {
    const now = Date.now();
    const global = questions.map((question) =>
      admissible(subject) ? globalPaths(subject, question.permission, now) : [],
    );
    // Device facts only where no way without end is known already (a super_admin's role): no query then.
    const open = questions.filter(
      (question, index) =>
        isDeviceScoped(question.permission) && !(global[index] ?? []).some((path) => path.expires_at === null),
    );
    const facts = await this.authoritiesAsked(subject, open);
    return questions.map((question, index) =>
      lastEnd([
        ...(global[index] ?? []),
        ...(isDeviceScoped(question.permission)
          ? devicePaths(facts.get(question.device_id) ?? [], question.permission, now)
          : []),
      ]),
    );
  }

  /**
   * Many (permission, device) questions at once, for bulk per-item checks: layers 3a/3b in
   * memory, layer 3c from one query over the subject's authorities on the devices asked about.
   */
  async decideMany(subject: Subject, questions: readonly DeviceQuestion[], noteUses = false): Promise<boolean[]> {
    const now = Date.now();
    const global = (permission: string): boolean =>
      isPermissionCode(permission) && this.decideGlobally(subject, permission, now).allowed;
    const open = questions.filter((question) => !global(question.permission) && isDeviceScoped(question.permission));
    const facts = await this.authoritiesAsked(subject, open);
    return questions.map((question) => {
      if (global(question.permission)) {
        if (noteUses)
          this.uses.note(
            subject,
            this.decideGlobally(subject, question.permission as PermissionCode, now),
            question.permission,
          );
        return true;
      }
      const held = isDeviceScoped(question.permission) ? (facts.get(question.device_id) ?? []) : [];
      const [way] = devicePaths(held, question.permission, now);
      if (way !== undefined && noteUses) this.uses.note(subject, decisionOf([way]), question.permission);
      return way !== undefined;
    });
  }

  /**
   * The devices on which the subject holds the permission: `all` through layers 3a/3b,
   * otherwise those where layer 3c allows it (optionally only among `among`). Serves list row
   * filtering with one query.
   */
  async devicesAllowed(
    subject: Subject,
    permission: PermissionCode,
    among?: readonly number[],
    noteUses = false,
  ): Promise<'all' | Set<number>> {
    const now = Date.now();
    const global = this.decideGlobally(subject, permission, now);
    if (global.allowed) {
      if (noteUses) this.uses.note(subject, global, permission);
      return 'all';
    }
    if (!admissible(subject) || !isDeviceScoped(permission)) return new Set();
    const facts = await this.authoritiesOf(subject, among);
    const devices = new Set<number>();
    for (const [deviceId, held] of facts) {
      const [way] = devicePaths(held, permission, now);
      if (way === undefined) continue;
      devices.add(deviceId);
      // A list filtered to the devices an authority allows uses each of those ways.
      if (noteUses) this.uses.note(subject, decisionOf([way]), permission);
    }
    return devices;
  }

  /**
   * Every device-scoped permission the subject is allowed on each device it holds a live authority
   * on (layer 3c, or 3a/3b, which allow it everywhere): one query and one pass over its
   * authorities, for a row filter that needs every (device, permission) pair. `decideMany` over the
   * same pairs asks layers 3a/3b again for each pair (a hundred thousand for an owner of 5 000
   * devices).
   */
  async deviceScopedRights(subject: Subject): Promise<Map<number, ReadonlySet<PermissionCode>>> {
    const now = Date.now();
    const everywhere = DEVICE_SCOPED_CODES.filter((code) => this.decideGlobally(subject, code, now).allowed);
    const rights = new Map<number, ReadonlySet<PermissionCode>>();
    if (!admissible(subject)) return rights;
    for (const [deviceId, held] of await this.authoritiesOf(subject)) {
      const allowed = new Set<PermissionCode>(everywhere);
      for (const code of DEVICE_SCOPED_CODES)
        if (!allowed.has(code) && devicePaths(held, code, now).length > 0) allowed.add(code);
      rights.set(deviceId, allowed);
    }
    return rights;
  }

  /**
   * The subject's live authorities by device (its own, and its groups' as it holds them),
   * optionally only on the devices `among`: one query.
   */
  /** The subject's authorities on the devices of `open` questions, by device: no query when none is open. */
  private async authoritiesAsked(
    subject: Subject,
    open: readonly DeviceQuestion[],
  ): Promise<Map<number, AuthorityFacts[]>> {
    if (open.length === 0 || !admissible(subject)) return new Map();
    return this.authoritiesOf(
      subject,
      open.map((question) => question.device_id),
    );
  }

  private async authoritiesOf(subject: Subject, among?: readonly number[]): Promise<Map<number, AuthorityFacts[]>> {
    const rows = heldNow(subject, await this.facts.liveAuthoritiesOf(subject.user_id, among));
    const byDevice = new Map<number, AuthorityFacts[]>();
    for (const row of rows) {
      const deviceId = Number(row.device_id);
      byDevice.set(deviceId, [...(byDevice.get(deviceId) ?? []), row]);
    }
    return byDevice;
  }
}

/** When the last of these ways ends: null when one never does, undefined when there is none. */
function lastEnd(paths: readonly AccessPath[]): Date | null | undefined {
  if (paths.length === 0) return undefined;
  if (paths.some((path) => path.expires_at === null)) return null;
  return new Date(Math.max(...paths.map((path) => Date.parse(path.expires_at ?? ''))));
}

/** The earlier of two ends (null: no end). */
export function earlierEnd(a: Date | null, b: Date | null): Date | null {
  if (a === null) return b;
  if (b === null) return a;
  return a.getTime() <= b.getTime() ? a : b;
}
