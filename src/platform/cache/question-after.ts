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
    /** When the question is sent: after the turn's other calls (the tests pass a gate). */
    private readonly later: (send: () => void) => void = (send) => setImmediate(send),
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
