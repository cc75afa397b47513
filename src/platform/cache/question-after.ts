/**
 * One question, asked once after every call made in the same turn of the event loop, its answer
 * shared by them all. The commands of one connection run in the order they were sent, so an answer
 * asked after a read describes the server as it was when that read ran or later, never earlier:
 * what a read may trust (the server's role and replication id) is checked for a whole batch of
 * concurrent reads with one question instead of one each.
 */
export class QuestionAfter<T> {
  private next: Promise<T> | undefined;

  constructor(
    private readonly ask: () => Promise<T>,
    /**
     * When the question is sent: after the calls of this turn and of the next (the tests pass a
     * gate). Any moment after them keeps the answer true for them; waiting one more turn lets the
     * reads of two turns share it, which halved the questions (`INFO replication`, 4 µs of Redis
     * time each) and took Redis CPU per cached read from about 1.5× a bare server's to 1.2×.
     */
    private readonly later: (send: () => void) => void = (send) => setImmediate(() => setImmediate(send)),
  ) {}

  /** The answer to a question sent after this call (and after any other made before it is sent). */
  after(): Promise<T> {
    this.next ??= new Promise<T>((resolve, reject) =>
      this.later(() => {
        this.next = undefined;
        try {
          this.ask().then(resolve, reject);
        } catch (error) {
          reject(error instanceof Error ? error : new Error(String(error)));
        }
      }),
    );
    return this.next;
  }
}
