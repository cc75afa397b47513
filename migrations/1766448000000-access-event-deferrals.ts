import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Access-change events written after the commit (part 6.17): a write whose access changes exceed
 * 1 000 (a group of many members) stores them here in chunks, in its own transaction, and a job
 * appends each chunk's events and deletes the chunk in one transaction of its own, so an instance
 * that dies mid-way leaves the rest for another: none lost, none repeated. `xid` names the write,
 * whose own first event is the changes' cause.
 */
export class AccessEventDeferrals1766448000000 implements MigrationInterface {
  name = 'AccessEventDeferrals1766448000000';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`CREATE TABLE access_event_deferrals (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        xid xid8 NOT NULL DEFAULT pg_current_xact_id(),
        actor_id bigint NULL,
        request_id text NULL,
        changes jsonb NOT NULL CHECK (jsonb_typeof(changes) = 'array'),
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query('DROP TABLE access_event_deferrals');
  }
}
