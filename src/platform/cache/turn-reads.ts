/** The values of one read, and the answer to the question asked after it. */
export interface TurnRead<Answer> {
  values: (string | null)[];
  answer: Answer;
}

interface Waiting<Answer> {
  keys: readonly string[];
  resolve: (read: TurnRead<Answer>) => void;
  reject: (error: Error) => void;
}

/** Keys per MGET: a turn with more sends several, still in one write, so none holds Redis long. */
const KEYS_PER_MGET = 1024;

const asError = (error: unknown): Error => (error instanceof Error ? error : new Error(String(error)));

/**
 * The plain reads made in one turn of the event loop, sent together once it ends: one MGET of
 * every key they asked (each once), then one question about the server (its role and replication id). Both
 * leave in the same write, so Redis reads, runs and answers a turn's reads as one request instead
 * of one request each (its CPU per cached read is mostly that I/O, not the key lookups). The
 * commands of one connection run in the order they were sent, so the answer describes the server
 * as it was when the reads ran or later, never earlier. A read waits no longer than before: it
 * already waited for that question, which must follow its turn's reads.
 */
export class TurnReads<Answer> {
  private waiting: Waiting<Answer>[] = [];

  constructor(
    private readonly mget: (keys: string[]) => Promise<(string | null)[]>,
    private readonly ask: () => Promise<Answer>,
    /** When the turn's reads are sent: after its other calls (the tests pass a gate). */
    private readonly later: (send: () => void) => void = (send) => setImmediate(send),
  ) {}

  /** The values of `keys` and the answer to a question asked after them. */
  read(keys: readonly string[]): Promise<TurnRead<Answer>> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ keys, resolve, reject });
      if (this.waiting.length === 1) this.later(() => this.send());
    });
  }

  private send(): void {
    const reads = this.waiting;
    this.waiting = [];
    // Each key once: concurrent reads share sessions, users, entities and above all the shards'
    // generations, and a key read twice in one MGET answers the same value twice.
    const places = new Map<string, number>();
    const keys: string[] = [];
    const wanted = reads.map((read) =>
      read.keys.map((key) => {
        let place = places.get(key);
        if (place === undefined) {
          place = keys.push(key) - 1;
          places.set(key, place);
        }
        return place;
      }),
    );
    let sent: [Promise<(string | null)[][]>, Promise<Answer>];
    try {
      // Every MGET before the question, all called now: the client writes them in this order.
      const chunks: Promise<(string | null)[]>[] = [];
      for (let at = 0; at < keys.length; at += KEYS_PER_MGET)
        chunks.push(this.mget(keys.slice(at, at + KEYS_PER_MGET)));
      sent = [Promise.all(chunks), this.ask()];
    } catch (error) {
      for (const read of reads) read.reject(asError(error));
      return;
    }
    Promise.all(sent).then(
      ([chunks, answer]) => {
        const values = chunks.flat();
        reads.forEach((read, index) =>
          read.resolve({ values: (wanted[index] ?? []).map((place) => values[place] ?? null), answer }),
        );
      },
      (error: unknown) => {
        for (const read of reads) read.reject(asError(error));
      },
    );
  }
}
