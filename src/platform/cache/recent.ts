/**
 * A map that keeps at most `capacity` values, dropping the oldest first (a Map iterates in
 * insertion order): the per-instance memories of the hot paths (verified tokens, decoded entries,
 * parsed generations, page digests, list totals) are bounded this one way.
 */
export class Recent<K, V> {
  private readonly values = new Map<K, V>();

  constructor(private readonly capacity: number) {}

  get(key: K): V | undefined {
    return this.values.get(key);
  }

  set(key: K, value: V): void {
    this.values.delete(key);
    if (this.values.size >= this.capacity) {
      const oldest = this.values.keys().next();
      if (oldest.done !== true) this.values.delete(oldest.value);
    }
    this.values.set(key, value);
  }

  delete(key: K): void {
    this.values.delete(key);
  }

  get size(): number {
    return this.values.size;
  }
}
