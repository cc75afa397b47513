import { Injectable } from '@nestjs/common';
import { UserReferences } from '../users/user-references.repository.js';
import { ApiError } from '../platform/http/api-error.js';
import { creationStamp, deletionStamp, restorationStamp, updateStamp } from '../platform/audit/actor-stamps.js';
import { AuditService, diffChanges } from '../platform/audit/audit.service.js';
import { assertIfMatch, unchanged, type IfMatch } from '../platform/http/etag.js';
import { AcceptedResponse, type NoContent, ResourceResponse, type ListResponse } from '../platform/http/responses.js';
import { respondWith, withoutVersion } from '../platform/projections/resource-table.js';
import { UnitOfWork, type Tx } from '../platform/database/unit-of-work.js';
import { JobQueue } from '../platform/jobs/job-queue.js';
import type { AcceptedJobDto } from '../platform/jobs/jobs.dto.js';
import { ReadStateService } from '../read-state/read-state.service.js';
import type { CreateMessageDto, InboxMessageDto, SendPushDto, UpdateMessageDto } from './inbox.dto.js';
import { MessagesRepository, type MessageRow } from './messages.repository.js';
import type { Prefetched } from '../platform/projections/prefetched.js';

const AUDITED_FIELDS = [
  'user_id',
  'conversation_id',
  'type',
  'title',
  'body',
  'data',
] as const satisfies readonly (keyof MessageRow)[];
/** A message the service sends on its own behalf (`notify`). */
export interface Notice {
  readonly user_id: number;
  readonly type: string;
  readonly title: string;
  readonly body: string;
  readonly data: Readonly<Record<string, unknown>>;
}

/** How long a client should wait before polling a new push job. */
const POLL_AFTER_SECONDS = 1;
/** `inbox_messages.title` holds 1–200 characters (code points, as PostgreSQL counts them). */
const TITLE_MAX = 200;

/**
 * A notice's title within the inbox's limit: a title built around a user's text (a campaign's
 * name of up to 200 characters) is cut with an ellipsis rather than failing its transaction.
 */
function fitTitle(title: string): string {
  const characters = [...title];
  return characters.length <= TITLE_MAX ? title : `${characters.slice(0, TITLE_MAX - 1).join('')}…`;
}

/** Inbox messages (part 6.7); each write keeps the recipient's read state and counts in step. */
@Injectable()
export class MessagesService {
  constructor(
    private readonly uow: UnitOfWork,
    private readonly userReferences: UserReferences,
    private readonly messages: MessagesRepository,
    private readonly readState: ReadStateService,
    private readonly audit: AuditService,
    private readonly jobs: JobQueue,
  ) {}

  list(query: Record<string, unknown>): Promise<ListResponse<InboxMessageDto>> {
    return this.messages.list(query);
  }

  get(id: number, includeDeleted: boolean, prefetched?: Prefetched): Promise<ResourceResponse<InboxMessageDto>> {
    return this.messages.detail(id, includeDeleted, prefetched);
  }

  /** 201; the recipient's read-state row is created in the same transaction. */
  async create(dto: CreateMessageDto): Promise<ResourceResponse<InboxMessageDto>> {
    const row = await this.uow.run(async (tx) => {
      const stamp = creationStamp(tx);
      await this.userReferences.liveUser(tx.db, dto.user_id);
      const created = await this.messages.insert(tx, {
        user_id: dto.user_id,
        conversation_id: dto.conversation_id ?? null,
        type: dto.type,
        title: dto.title,
        body: dto.body,
        data: dto.data === undefined ? null : JSON.stringify(dto.data),
        ...stamp,
      });
      if (created === undefined) throw new Error('message insert returned no row');
      await this.readState.createFor(tx, created);
      await this.audit.record(tx, 'inbox_message.create', created.id, {
        changes: diffChanges(null, created, AUDITED_FIELDS),
      });
      await this.countsChanged(tx, created);
      return created;
    });
    return respondWith(row, { status: 201, location: `/v1/admin/inbox/${row.id}` });
  }

  /**
   * A message the service itself sends (an access request to its approvers, a decision to its
   * requester), inside the caller's transaction: the message with its read state, counts and audit
   * event as `create` makes them, and its push through the usual `send-push` job.
   */
  async notify(tx: Tx, notice: Notice): Promise<MessageRow> {
    const created = await this.messages.insert(tx, {
      user_id: notice.user_id,
      conversation_id: null,
      type: notice.type,
      title: fitTitle(notice.title),
      body: notice.body,
      data: JSON.stringify(notice.data),
      ...creationStamp(tx),
    });
    if (created === undefined) throw new Error('message insert returned no row');
    await this.readState.createFor(tx, created);
    await this.audit.record(tx, 'inbox_message.create', created.id, {
      changes: diffChanges(null, created, AUDITED_FIELDS),
    });
    await this.countsChanged(tx, created);
    await this.jobs.enqueue(tx, 'send-push', { message_id: created.id, title: null, body: null });
    return created;
  }

  async update(id: number, dto: UpdateMessageDto, ifMatch: IfMatch): Promise<ResourceResponse<InboxMessageDto>> {
    const row = await this.uow.run(async (tx) => {
      const before = await this.messages.lockLive(tx, id);
      assertIfMatch(ifMatch, before.version);
      const wanted = {
        ...before,
        ...(dto.title === undefined ? {} : { title: dto.title }),
        ...(dto.body === undefined ? {} : { body: dto.body }),
        ...(dto.data === undefined ? {} : { data: dto.data }),
      };
      const changes = diffChanges(before, wanted, ['title', 'body', 'data']);
      if (Object.keys(changes).length === 0) return before;
      const after = await this.messages.patch(tx, id, {
        title: wanted.title,
        body: wanted.body,
        data: wanted.data === null ? null : JSON.stringify(wanted.data),
        ...updateStamp(tx),
      });
      await this.audit.record(tx, 'inbox_message.update', id, { before, changes });
      return after;
    });
    return respondWith(row);
  }

  remove(id: number, ifMatch: IfMatch): Promise<ResourceResponse<InboxMessageDto> | NoContent> {
    return this.uow.run(async (tx) => {
      const before = await this.messages.lock(tx, id);
      if (before.is_deleted) return unchanged(ifMatch, before.version);
      assertIfMatch(ifMatch, before.version);
      const after = await this.softDelete(tx, id, null);
      return respondWith(after);
    });
  }

  restore(id: number, ifMatch: IfMatch): Promise<ResourceResponse<InboxMessageDto> | NoContent> {
    return this.uow.run(async (tx) => {
      const before = await this.messages.lock(tx, id);
      if (!before.is_deleted) return unchanged(ifMatch, before.version);
      assertIfMatch(ifMatch, before.version);
      const after = await this.messages.patch(tx, id, restorationStamp(tx));
      await this.audit.record(tx, 'inbox_message.restore', id, { before, changes: { is_deleted: [true, false] } });
      await this.readState.messagesChanged(tx, [id]);
      return respondWith(after);
    });
  }

  /** Soft-deletes a live message inside `tx`. */
  async softDelete(tx: Tx, id: number, reason: string | null): Promise<MessageRow> {
    const [after] = await this.softDeleteMany(tx, [id], reason);
    if (after === undefined) throw ApiError.notFound('MESSAGE_NOT_FOUND', id);
    return after;
  }

  /** Soft-deletes live messages in a few set-based statements (bulk-delete), with one audit event each. */
  async softDeleteMany(tx: Tx, ids: readonly number[], reason: string | null): Promise<MessageRow[]> {
    if (ids.length === 0) return [];
    const rows = await this.messages.softDeleteMany(tx, ids, deletionStamp(tx));
    await this.audit.recordMany(
      tx,
      rows.map((row) => ({
        action: 'inbox_message.delete',
        resource_id: row.id,
        // Live messages (the statement deletes no other): their updated_by was not kept.
        before: { deleted_at: null, deleted_by: null },
        reason,
        changes: { is_deleted: [false, true] },
      })),
    );
    await this.readState.messagesChanged(
      tx,
      rows.map((row) => row.id),
    );
    return rows;
  }

  /** 202: the push job is enqueued in the same transaction as its audit event. */
  async sendPush(id: number, dto: SendPushDto, ifMatch: IfMatch): Promise<AcceptedResponse<AcceptedJobDto>> {
    const jobId = await this.uow.run(async (tx) => {
      const message = await this.messages.lockLive(tx, id);
      assertIfMatch(ifMatch, message.version);
      const job = await this.jobs.enqueue(tx, 'send-push', {
        message_id: id,
        title: dto.title ?? null,
        body: dto.body ?? null,
      });
      tx.noteResource('inbox_message', withoutVersion(message)); // unchanged, shown as it is
      await this.audit.record(tx, 'inbox_message.send_push', id, { changes: { job_id: [null, job] } });
      return job;
    });
    return new AcceptedResponse<AcceptedJobDto>(
      { job_id: jobId, state: 'queued' },
      `/v1/admin/jobs/${jobId}`,
      POLL_AFTER_SECONDS,
    );
  }

  private countsChanged(tx: Tx, message: MessageRow): Promise<void> {
    return this.readState.countsChanged(tx, [{ user_id: message.user_id, conversation_id: message.conversation_id }]);
  }
}
