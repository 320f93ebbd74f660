/**
 * Appends `entry` to a journal kept to at most `max` entries: when full, the oldest tenth goes at once,
 * so a long run stays bounded at little cost per entry (not one array shift for every new one).
 */
export function appendBounded<T>(entries: T[], entry: T, max: number): void {
  if (entries.length >= max) entries.splice(0, Math.max(1, Math.floor(max / 10)));
  entries.push(entry);
}

export interface JournalLimits {
  maxEntries: number;
  /** The most bytes its entries may add up to, each weighed by the size given when it was appended. */
  maxBytes: number;
}

/**
 * The newest entries, bounded by count and by total size: a count alone lets a few huge entries (a
 * megabyte each) hold gigabytes. Entries leave oldest first; when either bound is passed, enough go at
 * once to fall a tenth below it, so the cost per entry stays small. `entries` is one array for the
 * journal's whole life (it is trimmed in place), so it can be handed out.
 */
export class BoundedJournal<T> {
  readonly entries: T[] = [];
  readonly #sizes: number[] = [];
  readonly #limits: JournalLimits;
  readonly #onDrop: ((entry: T) => void) | undefined;
  #bytes = 0;

  /** `onDrop` is told of each entry as it leaves. */
  constructor(limits: JournalLimits, onDrop?: (entry: T) => void) {
    this.#limits = limits;
    this.#onDrop = onDrop;
  }

  /** What the entries weigh together, in the sizes they were appended with. */
  get bytes(): number {
    return this.#bytes;
  }

  append(entry: T, bytes: number): void {
    this.entries.push(entry);
    this.#sizes.push(bytes);
    this.#bytes += bytes;
    const { maxEntries, maxBytes } = this.#limits;
    if (this.entries.length <= maxEntries && this.#bytes <= maxBytes) return;
    const keepEntries = Math.floor(maxEntries * 0.9);
    const keepBytes = maxBytes * 0.9;
    let drop = Math.max(0, this.entries.length - keepEntries);
    let bytesLeft = this.#bytes;
    for (let index = 0; index < drop; index++) bytesLeft -= this.#sizes[index]!;
    while (drop < this.entries.length && bytesLeft > keepBytes) bytesLeft -= this.#sizes[drop++]!;
    const dropped = this.entries.splice(0, drop);
    this.#sizes.splice(0, drop);
    this.#bytes = bytesLeft;
    if (this.#onDrop) for (const old of dropped) this.#onDrop(old);
  }
}
