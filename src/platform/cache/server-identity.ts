/** The server a connection reached, as learned on that connection. */
export interface Identity {
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
 * A master's replication id also changes without a reconnect (when its first replica attaches).
 * Scripts then find generations under the new stamp and trust them (they ask the server when a
 * stamp is not the one they were told), and the store asks again here (`recheck`) so that its
 * plain reads trust them too.
 */
export class ServerIdentity {
  private connection = 0;
  private known: Identity | undefined;
  private asking: Promise<Identity> | undefined;

  constructor(private readonly askStamp: () => Promise<string>) {}

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
      const stamp = await this.askStamp();
      if (connection !== this.connection || !/^\w+$/.test(stamp))
        throw new Error('the redis connection changed while its server was identified');
      this.known = { stamp, connection };
      return this.known;
    } finally {
      if (connection === this.connection) this.asking = undefined;
    }
  }
}
