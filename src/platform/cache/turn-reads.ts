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

/** One MGET of a turn: its keys (each once) and where each key sits in it. */
interface Chunk {
  readonly keys: string[];
  readonly places: Map<string, number>;
}

/**
 * Keys per MGET: a turn with more sends several, so none holds Redis long (with small values). A
 * read's keys always share one MGET (a generation and its entry are read together): a read of more
 * keys than this has an MGET of its own.
 */
const KEYS_PER_MGET = 1024;

const asError = (error: unknown): Error => (error instanceof Error ? error : new Error(String(error)));

/**
 * The plain reads made in one turn of the event loop, sent together once it ends: one MGET of
 * every key they asked (each once), then one question about the server (its role and replication
 * id), called in that order at once, so the client writes them in that order, in one write unless
 * its socket buffer fills. Redis then reads, runs and answers a turn's reads as one request instead
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
    // Each key once per MGET: concurrent reads share sessions, users, entities and above all the
    // shards' generations, and a key read twice in one MGET answers the same value twice.
    const chunks: Chunk[] = [];
    const wanted = reads.map((read) => {
      let chunk = chunks.at(-1);
      if (chunk === undefined || (chunk.keys.length > 0 && chunk.keys.length + read.keys.length > KEYS_PER_MGET)) {
        chunk = { keys: [], places: new Map() };
        chunks.push(chunk);
      }
      const places = read.keys.map((key) => {
        let place = chunk.places.get(key);
        if (place === undefined) {
          place = chunk.keys.push(key) - 1;
          chunk.places.set(key, place);
        }
        return place;
      });
      return { chunk: chunks.length - 1, places };
    });
    const fail = (error: unknown): void => {
      for (const read of reads) read.reject(asError(error));
    };
    // Every MGET before the question, all called now: the client queues them in this order.
    const sent: Promise<unknown>[] = [];
    try {
      for (const chunk of chunks) sent.push(chunk.keys.length === 0 ? Promise.resolve([]) : this.mget(chunk.keys));
      sent.push(this.ask());
    } catch (error) {
      // A command refused at once: those already sent are awaited by nobody else.
      for (const call of sent) call.catch(() => undefined);
      fail(error);
      return;
    }
    Promise.all(sent).then((answers) => {
      const answer = answers.pop() as Answer;
      const values = answers as (string | null)[][];
      reads.forEach((read, index) => {
        const { chunk, places } = wanted[index] ?? { chunk: 0, places: [] };
        const stored = values[chunk] ?? [];
        read.resolve({ values: places.map((place) => stored[place] ?? null), answer });
      });
    }, fail);
  }
}
