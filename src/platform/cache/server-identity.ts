/** The server a connection reached, as learned on that connection. */
export interface Identity {
  /** The server's run id: it names the process, which cannot change without a reconnect. */
  readonly runId: string;
  /**
   * The server's stamp: its run id followed by its replication id ('' where scripts ask the server
   * themselves: a cluster). The run id names the process; the replication id names the history
   * of its data, which a promotion always starts anew, so a process demoted, resynced from
   * another master and promoted back does not trust the generations it wrote before.
   */
  readonly stamp: string;
  /** The connection it was learned on: it holds only while no reconnect happened since. */
  readonly connection: number;
}

/**
 * The stamp of the Redis server behind one client, asked once per connection (INFO server and
 * replication) rather than inside every script. Every connection event (connect, ready, error,
 * end, reconnecting) may mean another server: the stamp is asked again, and a call that spanned
 * such an event is not trusted (`still`). The client rejects every command in flight when its
 * socket drops, so a reply always comes from the connection the call was sent on.
 *
 * The replication id and the role change without a reconnect (a first replica attaching,
 * `FAILOVER`): plain reads get both with every MGET, and a read that finds them changed has the
 * stamp asked again here (`recheck`) for the scripts, which meanwhile ask the server themselves
 * whenever a stored stamp is not the one they were told.
 */
export class ServerIdentity {
  private connection = 0;
  private known: Identity | undefined;
  private asking: Promise<Identity> | undefined;

  constructor(private readonly askServer: () => Promise<{ readonly runId: string; readonly stamp: string }>) {}

  /** A connection event: whatever was learned may be about another server now. */
  changed(): void {
    this.connection += 1;
    this.known = undefined;
    this.asking = undefined;
  }

  /** `identity` may be out of date on the same connection: the next call asks again. */
  recheck(identity: Identity): void {
    if (this.known === identity) this.known = undefined;
  }

  /** The identity on the current connection: known at once, or asked (one question at a time). */
  current(): Identity | Promise<Identity> {
    if (this.known !== undefined) return this.known;
    this.asking ??= this.ask();
    return this.asking;
  }

  /** Whether no connection event happened since `identity` was learned. */
  still(identity: Identity): boolean {
    return identity.connection === this.connection;
  }

  private async ask(): Promise<Identity> {
    const connection = this.connection;
    try {
      const { runId, stamp } = await this.askServer();
      if (connection !== this.connection || !/^\w+$/.test(runId) || !(stamp === '' || stamp.startsWith(runId)))
        throw new Error('the redis connection changed while its server was identified');
      this.known = { runId, stamp, connection };
      return this.known;
    } finally {
      if (connection === this.connection) this.asking = undefined;
    }
  }
}
