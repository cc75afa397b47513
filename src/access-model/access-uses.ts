import { Inject, Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import { TableGenerations } from '../platform/cache/table-generations.js';
import { SETTINGS, type Settings } from '../platform/config/settings.js';
import { outsideRequests } from '../platform/http/request-context.js';
import type { Subject } from '../platform/auth/auth-context.js';
import type { Decision } from '../platform/auth/decision.js';
import { permissionIdOf } from '../platform/auth/permissions.js';
import { AccessUsesRepository } from './access-uses.repository.js';

/** A path is noted at most once a minute per instance (part 6.16). */
const NOTE_EVERY_MS = 60_000;
/** How long noted uses wait to be written together. */
const FLUSH_AFTER_MS = 5_000;

interface Noted {
  readonly at: Date;
  readonly grant_id?: number;
  readonly authority_id?: number;
  readonly permission_id?: number;
  /** A membership's use: the user, and its own group at the foot of the chain to the right. */
  readonly user_id?: number;
  readonly group_id?: number;
}

/**
 * The last use of revocable paths (part 6.16): the guard notes each request allowed through a
 * permission grant or an authority permission (its own or a group's, and then the membership it
 * came through); a path is noted at most once a minute on this
 * instance, and the notes are written together a few seconds later, by a timer, never by a
 * request. Noting is a map lookup; a failed write drops its batch and is counted (`stats`), and
 * no request ever waits for it. Role and ownership are not revocable paths: nothing is noted.
 */
@Injectable()
export class AccessUses implements OnModuleDestroy {
  private readonly logger = new Logger('AccessUses');
  readonly stats = { noted: 0, recorded: 0, dropped: 0, failed_flushes: 0 };
  private readonly lastNoted = new Map<string, number>();
  private pending = new Map<string, Noted>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly uses: AccessUsesRepository,
    private readonly generations: TableGenerations,
    @Inject(SETTINGS) private readonly settings: Pick<Settings, 'accessUseRecording'>,
  ) {}

  /**
   * Notes the path of the subject's allowing decision of `permission` (a no-op for any other
   * decision). A right held by a group also notes the membership it came through: the subject's
   * own membership at the foot of the chain (part 6.16, unused memberships).
   */
  note(subject: Pick<Subject, 'user_id' | 'groups'>, decision: Decision, permission: string): void {
    if (!decision.allowed || !this.settings.accessUseRecording) return;
    const by = decision.decided_by;
    if ((by === 'permission_grant' || by === 'group_permission_grant') && decision.grant_id !== null)
      this.notePath(`g:${decision.grant_id}`, { grant_id: decision.grant_id });
    else if ((by === 'authority_permission' || by === 'group_authority_permission') && decision.authority_id !== null) {
      const permissionId = permissionIdOf(permission);
      if (permissionId === undefined) return;
      this.notePath(`a:${decision.authority_id}:${permissionId}`, {
        authority_id: decision.authority_id,
        permission_id: permissionId,
      });
    } else return;
    if (decision.group_id === null) return;
    const own = subject.groups?.find((group) => group.group_id === decision.group_id)?.via[0];
    if (own !== undefined) this.notePath(`m:${subject.user_id}:${own}`, { user_id: subject.user_id, group_id: own });
  }

  private notePath(key: string, path: Omit<Noted, 'at'>): void {
    const now = Date.now();
    const last = this.lastNoted.get(key);
    if (last !== undefined && now - last < NOTE_EVERY_MS) return;
    this.lastNoted.set(key, now);
    this.pending.set(key, { ...path, at: new Date(now) });
    this.stats.noted += 1;
    // Armed outside the request that noted the use: the flush serves every request, not this one's cache budget.
    this.timer ??= outsideRequests(() => setTimeout(() => void this.flush(), FLUSH_AFTER_MS).unref());
  }

  /** Writes what was noted so far (the timer's work; tests and shutdown call it too). */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.writePending());
    return this.flushing;
  }

  async onModuleDestroy(): Promise<void> {
    await this.flush();
  }

  private async writePending(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = [...this.pending.values()];
    this.pending = new Map();
    this.forgetOld(Date.now());
    if (batch.length === 0) return;
    try {
      await this.uses.record({
        grants: batch.flatMap((use) => (use.grant_id === undefined ? [] : [{ grant_id: use.grant_id, at: use.at }])),
        authorityPermissions: batch.flatMap((use) =>
          use.authority_id === undefined || use.permission_id === undefined
            ? []
            : [{ authority_id: use.authority_id, permission_id: use.permission_id, at: use.at }],
        ),
        memberships: batch.flatMap((use) =>
          use.user_id === undefined || use.group_id === undefined
            ? []
            : [{ user_id: use.user_id, group_id: use.group_id, at: use.at }],
        ),
      });
      this.stats.recorded += batch.length;
    } catch (error) {
      this.stats.dropped += batch.length;
      this.stats.failed_flushes += 1;
      this.logger.warn({
        msg: 'last uses of access paths not recorded; dropped',
        dropped: batch.length,
        err: error instanceof Error ? error.message : String(error),
      });
      return;
    }
    // Cached answers of the access questions show last uses: they are read again. The cache never
    // throws; a bump that does not land is a lost write, and this instance drops its cache before
    // it trusts it again.
    await this.generations.bump(['access_path_uses']);
  }

  /** Paths noted more than a minute ago may be noted again: their marks go. */
  private forgetOld(now: number): void {
    for (const [key, at] of this.lastNoted) if (now - at >= NOTE_EVERY_MS) this.lastNoted.delete(key);
  }
}
