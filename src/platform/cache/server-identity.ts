/** The server a connection reached, as learned on that connection. */
export interface Identity {
  /** The server's run id ('' where scripts ask the server themselves: a cluster). */
  readonly runId: string;
  /** The connection it was learned on: it holds only while no reconnect happened since. */
  readonly connection: number;
}

/**
 * The run id of the Redis server behind one client, asked once per connection (INFO server) rather
 * than inside every script. Every connection event (connect, ready, error, end, reconnecting) may
 * mean another server: the identity is asked again, and a call that spanned such an event is not
 * trusted (`still`). The client rejects every command in flight when its socket drops, so a reply
 * always comes from the connection the call was sent on.
 */
export class ServerIdentity {
  private connection = 0;
  private known: Identity | undefined;
  private asking: Promise<Identity> | undefined;

  constructor(private readonly askRunId: () => Promise<string>) {}

  /** A connection event: whatever was learned may be about another server now. */
  changed(): void {
    this.connection += 1;
    this.known = undefined;
    this.asking = undefined;
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
      const runId = await this.askRunId();
      if (connection !== this.connection || !/^\w+$/.test(runId))
        throw new Error('the redis connection changed while its server was identified');
      this.known = { runId, connection };
      return this.known;
    } finally {
      if (connection === this.connection) this.asking = undefined;
    }
  }
}
