import { isRecord, type JsonRecord } from '../../src/lib/json.ts';

/** A logger's `write` that keeps each line it writes, parsed, in `lines`, then calls `onLine`. */
export function keepLines(lines: JsonRecord[], onLine?: () => void): (line: string) => void {
  return (line) => {
    const parsed: unknown = JSON.parse(line);
    if (isRecord(parsed)) lines.push(parsed);
    onLine?.();
  };
}
