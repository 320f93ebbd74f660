import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLogger } from '../../src/lib/log.ts';
import { openStore, StoredRecordError, versionedRecord, type Store } from '../../src/store/index.ts';

// A kind of record with a version: any older version upgraded as it is read, the current one checked,
// and what a parser read past logged once, with the record it was in.

/** A note, version 2: version 1 called its text `body`; version 0 (no `v`) was the text alone, in `note`. */
interface Note {
  v: 2;
  text: string;
  pinned: boolean;
}

const parseNote = versionedRecord<Note>({
  name: 'note',
  version: 2,
  schema: z.object({ v: z.literal(2), text: z.string(), pinned: z.boolean() }),
  upgrade: (stored, from, warn) => {
    if (from === 0) warn('a note from before versions: read as not pinned');
    return from === 0 ? { text: stored.note, pinned: false } : { text: stored.body, pinned: stored.pinned };
  },
});

describe('a versioned record', () => {
  it('of every earlier version is upgraded as it is read; one of this version is read as written', () => {
    expect(parseNote({ note: 'first' })).toEqual({ v: 2, text: 'first', pinned: false });
    expect(parseNote({ v: 1, body: 'second', pinned: true })).toEqual({ v: 2, text: 'second', pinned: true });
    expect(parseNote({ v: 2, text: 'third', pinned: false })).toEqual({ v: 2, text: 'third', pinned: false });
  });

  it('of a newer version is read as what this version knows of it, or not at all', () => {
    expect(parseNote({ v: 3, text: 'later', pinned: true, colour: 'red' })).toEqual({ v: 2, text: 'later', pinned: true });
    expect(() => parseNote({ v: 3, title: 'later' })).toThrow('note.text must be a string; note.pinned must be a boolean');
  });

  it('that does not fit is refused, naming every field', () => {
    expect(() => parseNote('a note')).toThrow('note must be an object');
    expect(() => parseNote({ v: 'two' })).toThrow('note.v must be a version number');
    expect(() => parseNote({ v: 1, body: 7 })).toThrow('note.text must be a string; note.pinned must be a boolean');
  });
});

describe('a collection of versioned records', () => {
  let directory: string | undefined;
  let store: Store | undefined;
  afterEach(async () => {
    await store?.close();
    if (directory) rmSync(directory, { recursive: true, force: true });
  });

  it('logs what a parser read past as one warning naming the record, and refuses a record that does not fit', async () => {
    directory = mkdtempSync(join(tmpdir(), 'versioned-'));
    const lines: Record<string, unknown>[] = [];
    const log = createLogger({ level: 'warn', write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) });
    const url = `sqlite://${join(directory, 'bot.sqlite')}`;
    const writer = await openStore(url, log);
    const written = writer.collection('notes', (raw) => raw);
    await written.set('n1', { note: 'old' });
    await written.set('n2', { v: 2, text: 7 });
    await writer.close();
    store = await openStore(url, log);
    const notes = store.collection('notes', parseNote);
    expect(await notes.get('n1')).toEqual({ v: 2, text: 'old', pinned: false });
    expect(lines.filter((line) => line.msg === 'a note from before versions: read as not pinned')).toEqual([
      expect.objectContaining({ collection: 'notes', id: 'n1' }),
    ]);
    await expect(notes.get('n2')).rejects.toBeInstanceOf(StoredRecordError);
  });
});
