import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/lib/log.ts';
import { openStore, StoreUnavailableError, type Store } from '../../src/store/index.ts';
import { CONSENT_RECORDS, ConsentBook, parseConsentRecord } from '../../src/voice/consent.ts';
import { Hearing } from '../../src/voice/hearing.ts';

// Members' choices about being heard on real SQLite: kept, changed in one step each (two servers agreed
// to at once both hold), and a store that does not answer is a failure a conversation does not hear through.

const opened: { store: Store; directory: string }[] = [];
afterEach(async () => {
  for (const { store, directory } of opened.splice(0)) {
    await store.close().catch(() => undefined);
    rmSync(directory, { recursive: true, force: true });
  }
});

async function book(): Promise<{ store: Store; book: ConsentBook }> {
  const directory = mkdtempSync(join(tmpdir(), 'voice-consent-'));
  const store = await openStore(`sqlite://${join(directory, 'bot.sqlite')}`, silentLogger);
  opened.push({ store, directory });
  return { store, book: new ConsentBook(store.collection(CONSENT_RECORDS, parseConsentRecord)) };
}

describe('ConsentBook on SQLite', () => {
  it('keeps a member ignored until they listen again, with every server they agreed in', async () => {
    const { book: consent } = await book();
    expect(await consent.read('1')).toBeUndefined();
    await Promise.all([consent.listen('1', 'a'), consent.listen('1', 'b')]);
    await consent.ignore('1');
    expect(await consent.read('1')).toMatchObject({ ignored: true, agreedIn: expect.arrayContaining(['a', 'b']) });
    await consent.listen('1', 'a');
    expect(await consent.read('1')).toMatchObject({ ignored: false });
  });

  it('fails a read when the store is gone, and a conversation does not hear that member', async () => {
    const { store, book: consent } = await book();
    await store.close();
    await expect(consent.read('1')).rejects.toBeInstanceOf(StoreUnavailableError);
    const hearing = new Hearing({
      context: { mode: 'open', bringer: '1', guildId: 'a' },
      read: (userId) => consent.read(userId),
      onChange: () => undefined,
      log: silentLogger,
    });
    await hearing.load(['1']);
    expect(hearing.heard('1')).toBe(false);
    hearing.stop();
  });
});
