// A min-heap of (id, due time): the poller keeps one entry per tracked task and one timer for the
// earliest, so 10,000 tasks cost 10,000 small entries and a single setTimeout, not 10,000 timers.

interface Entry {
  id: string;
  dueAt: number;
}

export class Schedule {
  readonly #heap: Entry[] = [];
  /** Position of each id in the heap, so rescheduling is O(log n) rather than a scan. */
  readonly #positions = new Map<string, number>();

  get size(): number {
    return this.#heap.length;
  }

  has(id: string): boolean {
    return this.#positions.has(id);
  }

  /** Adds the id, or moves it to the new time if it is already scheduled. */
  set(id: string, dueAt: number): void {
    const position = this.#positions.get(id);
    if (position === undefined) {
      this.#heap.push({ id, dueAt });
      this.#positions.set(id, this.#heap.length - 1);
      this.#siftUp(this.#heap.length - 1);
      return;
    }
    const entry = this.#heap[position]!;
    const earlier = dueAt < entry.dueAt;
    entry.dueAt = dueAt;
    if (earlier) this.#siftUp(position);
    else this.#siftDown(position);
  }

  delete(id: string): boolean {
    const position = this.#positions.get(id);
    if (position === undefined) return false;
    this.#removeAt(position);
    return true;
  }

  /** The earliest due time, or undefined when empty. */
  peekDueAt(): number | undefined {
    return this.#heap[0]?.dueAt;
  }

  /** Removes and returns the earliest id if it is due by `now`. */
  takeDue(now: number): string | undefined {
    const first = this.#heap[0];
    if (!first || first.dueAt > now) return undefined;
    this.#removeAt(0);
    return first.id;
  }

  #removeAt(position: number): void {
    const removed = this.#heap[position]!;
    const last = this.#heap.pop()!;
    this.#positions.delete(removed.id);
    if (position === this.#heap.length) return;
    this.#heap[position] = last;
    this.#positions.set(last.id, position);
    this.#siftDown(position);
    this.#siftUp(position);
  }

  #swap(a: number, b: number): void {
    const first = this.#heap[a]!;
    const second = this.#heap[b]!;
    this.#heap[a] = second;
    this.#heap[b] = first;
    this.#positions.set(second.id, a);
    this.#positions.set(first.id, b);
  }

  #siftUp(position: number): void {
    let child = position;
    while (child > 0) {
      const parent = (child - 1) >> 1;
      if (this.#heap[parent]!.dueAt <= this.#heap[child]!.dueAt) return;
      this.#swap(parent, child);
      child = parent;
    }
  }

  #siftDown(position: number): void {
    let parent = position;
    for (;;) {
      const left = parent * 2 + 1;
      const right = left + 1;
      let smallest = parent;
      if (left < this.#heap.length && this.#heap[left]!.dueAt < this.#heap[smallest]!.dueAt) smallest = left;
      if (right < this.#heap.length && this.#heap[right]!.dueAt < this.#heap[smallest]!.dueAt) smallest = right;
      if (smallest === parent) return;
      this.#swap(parent, smallest);
      parent = smallest;
    }
  }
}
