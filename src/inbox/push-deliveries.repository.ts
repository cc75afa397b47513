import { Injectable } from '@nestjs/common';
import { UnitOfWork, type Tx } from '../platform/database/unit-of-work.js';
import type { PushOutcome } from './push/push-provider.js';
import { table } from '../platform/database/table.js';

const PUSH_DELIVERIES = table('push_deliveries');

/** One attempt to push a message to one mobile device. */
export interface PushAttempt {
  readonly job_id: string;
  readonly message_id: number;
  readonly mobile_device_id: number;
  readonly provider: string;
  readonly outcome: PushOutcome;
}

/** Each device's latest outcome in one job, counted. */
export interface PushTally {
  readonly devices: number;
  readonly sent: number;
  readonly failed: number;
  readonly deactivated: number;
}

/**
 * `push_deliveries`: the append-only log of push attempts. Written outside any request
 * transaction, one short transaction per attempt as it happens (so a retry never pushes twice),
 * and never cached.
 */
@Injectable()
export class PushDeliveriesRepository {
  constructor(private readonly uow: UnitOfWork) {}

  /** The devices the job has already settled (sent, failed for good, unregistered). */
  async settledDevices(jobId: string): Promise<Set<number>> {
    const rows = await this.uow.reader.query<{ id: number }[]>(
      "SELECT DISTINCT mobile_device_id AS id FROM push_deliveries WHERE job_id = $1 AND outcome <> 'retryable'",
      [jobId],
    );
    return new Set(rows.map((row) => Number(row.id)));
  }

  /** Records one attempt in the caller's transaction (with its feed event, when it has one). */
  async record(tx: Tx, attempt: PushAttempt): Promise<void> {
    const { outcome } = attempt;
    await tx.write(
      PUSH_DELIVERIES,
      `INSERT INTO push_deliveries (job_id, message_id, mobile_device_id, provider, outcome, error)
       VALUES ($1, $2, $3, $4, $5, $6)`,
      [
        attempt.job_id,
        attempt.message_id,
        attempt.mobile_device_id,
        attempt.provider,
        outcome.kind,
        outcome.kind === 'sent' ? null : outcome.error,
      ],
    );
  }

  /** Each device's latest outcome for the job, over all its attempts. */
  async tally(jobId: string): Promise<PushTally> {
    const [row] = await this.uow.reader.query<PushTally[]>(
      `SELECT count(*)::int AS devices,
              (count(*) FILTER (WHERE outcome = 'sent'))::int AS sent,
              (count(*) FILTER (WHERE outcome IN ('failed', 'retryable')))::int AS failed,
              (count(*) FILTER (WHERE outcome = 'unregistered'))::int AS deactivated
       FROM (SELECT DISTINCT ON (mobile_device_id) outcome FROM push_deliveries
             WHERE job_id = $1 ORDER BY mobile_device_id, id DESC) latest`,
      [jobId],
    );
    return row ?? { devices: 0, sent: 0, failed: 0, deactivated: 0 };
  }
}
