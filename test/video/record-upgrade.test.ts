import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/lib/log.ts';
import { openStore } from '../../src/store/index.ts';
import { SourceForms } from '../../src/video/message-sources.ts';
import { TaskRepository } from '../../src/video/repository.ts';
import { ENGLISH, resolveLocale } from '../../src/i18n/index.ts';
import { parseTaskRecord, TASK_RECORD_VERSION } from '../../src/video/record.ts';
import { renderStatusCard } from '../../src/video/status-card.ts';
import { cardButtons, cardText, galleryItems } from '../support/cards.ts';
import { taskRecord } from '../support/task-result.ts';

// Stored video tasks of every earlier version, as those versions wrote them, read by this one: each is
// upgraded to the current record (its delivery a state of the union), and its card drawn from it.

/** A task as the versions before records had a version wrote it (to 2026-11-28), with `delivery` and more. */
function unversioned(fields: Record<string, unknown>): unknown {
  return JSON.parse(
    JSON.stringify({
      id: 'vmi3abc0123456789ab',
      gatewayId: 'task_7',
      layer: 'native',
      keyId: 'k1',
      guildId: '100000000000000001',
      channelId: '100000000000000002',
      userId: '100000000000000003',
      operation: 'generate',
      mode: 'text-to-video',
      model: 'svc-imagine-video-1.5',
      prompt: 'a cat surfing',
      request: { model: 'svc-imagine-video-1.5', prompt: 'a cat surfing' },
      createdAt: 1_764_300_000_000,
      submittedAt: 1_764_300_001_000,
      finishedAt: 1_764_300_050_000,
      state: 'succeeded',
      polls: 4,
      pollErrors: 0,
      outcome: { videoUrl: 'https://gateway.example/files/task_7.mp4', costTicks: 4_200_000_000 },
      card: {
        applicationId: '100000000000000004',
        interactionToken: 'token',
        tokenExpiresAt: 1_764_300_870_000,
        messageId: '100000000000000005',
        componentsV2: true,
        renderedAt: 1_764_300_050_000,
        renderedState: 'succeeded||posted||task_7|',
      },
      attachmentSizeLimit: 10_485_760,
      reservation: { estimateTicks: 4_000_000_000, month: false },
      locale: 'fr',
      ...fields,
    }),
  );
}

const CARD = '100000000000000005';
const NONCE = 'vmi3abc0123456789ab';
const french = resolveLocale(undefined, 'fr', 'channel');

describe('a stored video task of the version before versions were counted', () => {
  it('waiting for its video: the same state, its nonce (its id) and the card flag gone, the current version', () => {
    const task = parseTaskRecord(unversioned({ delivery: { state: 'waiting', nonce: NONCE, attempts: 0 } }));
    expect(task.v).toBe(TASK_RECORD_VERSION);
    expect(task.delivery).toEqual({ state: 'waiting', attempts: 0 });
    expect(task.card).toEqual({
      applicationId: '100000000000000004',
      interactionToken: 'token',
      tokenExpiresAt: 1_764_300_870_000,
      messageId: CARD,
      renderedAt: 1_764_300_050_000,
      renderedState: 'succeeded||posted||task_7|',
    });
    expect(task).toMatchObject({ locale: french, reservation: { estimateUsdTicks: 4_000_000_000, month: false }, state: 'succeeded' });
    expect(task.outcome.costUsdTicks).toBe(4_200_000_000);
  });

  it('retrying after failures: its failures and why kept', () => {
    const task = parseTaskRecord(
      unversioned({ delivery: { state: 'waiting', nonce: NONCE, attempts: 0, failures: 2, lastError: 'The gateway did not answer.' } }),
    );
    expect(task.delivery).toEqual({ state: 'waiting', attempts: 0, failures: 2, lastError: 'The gateway did not answer.' });
  });

  it('being edited into its card: posting, since when', () => {
    const delivery = {
      state: 'posting',
      nonce: NONCE,
      attempts: 1,
      postingSince: 1_764_300_051_000,
      inCard: true,
      fileName: 'video-x.mp4',
    };
    expect(parseTaskRecord(unversioned({ delivery })).delivery).toEqual({ state: 'posting', attempts: 1, postingSince: 1_764_300_051_000 });
  });

  it('shown in its card with its file: posted, the file named, its attachment kept on later edits', () => {
    const delivery = {
      state: 'posted',
      nonce: NONCE,
      attempts: 1,
      postingSince: 1_764_300_051_000,
      inCard: true,
      fileName: `video-${NONCE}.mp4`,
      messageId: CARD,
      attachmentUrl: 'https://cdn.discordapp.com/attachments/2/9/video.mp4',
      attachmentId: '100000000000000009',
    };
    const task = parseTaskRecord(unversioned({ delivery }));
    expect(task.delivery).toEqual({
      state: 'posted',
      attempts: 1,
      postingSince: 1_764_300_051_000,
      messageId: CARD,
      video: { as: 'file', fileName: `video-${NONCE}.mp4` },
      attachmentUrl: 'https://cdn.discordapp.com/attachments/2/9/video.mp4',
      attachmentId: '100000000000000009',
    });
    expect(galleryItems(renderStatusCard(task))).toEqual([`attachment://video-${NONCE}.mp4`]);
  });

  it('shown in its card by a link: posted by link, and why', () => {
    const delivery = {
      state: 'posted',
      nonce: NONCE,
      attempts: 2,
      postingSince: 1_764_300_051_000,
      inCard: true,
      linkReason: "La vidéo dépasse la limite d'envoi du serveur.",
      messageId: CARD,
    };
    const task = parseTaskRecord(unversioned({ delivery }));
    expect(task.delivery).toMatchObject({
      state: 'posted',
      video: { as: 'link', reason: "La vidéo dépasse la limite d'envoi du serveur." },
      messageId: CARD,
    });
    expect(cardText(renderStatusCard(task))).toContain("La vidéo dépasse la limite d'envoi du serveur.");
  });

  it('closed: its failures and why kept', () => {
    const delivery = { state: 'closed', nonce: NONCE, attempts: 3, postingSince: 5, failures: 3, lastError: 'Gave up.' };
    expect(parseTaskRecord(unversioned({ delivery })).delivery).toEqual({
      state: 'closed',
      attempts: 3,
      postingSince: 5,
      failures: 3,
      lastError: 'Gave up.',
    });
  });
});

describe('a stored video task of the versions that posted the video as a message of its own (to 2026-11-28)', () => {
  // Neither a card language, a reservation, a Components V2 card nor Vary's note as a reason existed yet.
  const earlier = (delivery: Record<string, unknown>) =>
    unversioned({ delivery, locale: undefined, reservation: undefined, card: undefined, note: 'Envoyé sans la première image.' });
  const card = { applicationId: '100000000000000004', interactionToken: 'token', tokenExpiresAt: 1_764_300_870_000, messageId: CARD };

  it('posted: its card shows the video by its link, the message of its own stays where it is and is the source for edits', () => {
    const task = parseTaskRecord({
      ...(earlier({
        state: 'posted',
        nonce: NONCE,
        attempts: 1,
        postingSince: 1_764_300_051_000,
        messageId: '100000000000000008',
        attachmentUrl: 'https://cdn.discordapp.com/attachments/2/8/video.mp4',
      }) as object),
      card,
    });
    expect(task.delivery).toEqual({
      state: 'posted',
      attempts: 1,
      postingSince: 1_764_300_051_000,
      messageId: '100000000000000008',
      video: { as: 'link' },
      attachmentUrl: 'https://cdn.discordapp.com/attachments/2/8/video.mp4',
    });
    const drawn = renderStatusCard(task);
    expect(cardText(drawn)).toContain('**Done**');
    expect(galleryItems(drawn)).toEqual(['https://gateway.example/files/task_7.mp4']);
    expect(cardButtons(drawn).map((button) => button.label)).toEqual(['Extend', 'Edit', 'Regenerate', 'Change and regenerate', 'Delete']);
  });

  it('being posted, since a time it did not keep: posting since long ago, so a post of the card again looks in the channel first', () => {
    const task = parseTaskRecord({ ...(earlier({ state: 'posting', nonce: NONCE, attempts: 1 }) as object), card });
    expect(task.delivery).toEqual({ state: 'posting', attempts: 1, postingSince: 0 });
  });

  it('has a card of embeds out of reach: its message is not edited into Components V2, and what is left to show goes into a new card', () => {
    const task = parseTaskRecord({ ...(earlier({ state: 'waiting', nonce: NONCE, attempts: 0 }) as object), card });
    expect(task.card).toEqual({ applicationId: '100000000000000004', interactionToken: 'token', tokenExpiresAt: 0 });
  });

  it('speaks English, reserved nothing, and has no Vary note: its worded one names no reason', () => {
    const task = parseTaskRecord({ ...(earlier({ state: 'waiting', nonce: NONCE, attempts: 0 }) as object), card });
    expect(task.locale).toBe(ENGLISH);
    expect(task.reservation).toEqual({ estimateUsdTicks: 0, month: false });
    expect(task.varyNote).toBeUndefined();
    expect(cardText(renderStatusCard(task))).not.toContain('Envoyé');
  });
});

describe('a stored video task of this version', () => {
  it('reads back as written; one of a newer version reads as what this version knows of it', () => {
    const task = taskRecord({ state: 'succeeded', delivery: { state: 'closed', attempts: 0, lastError: 'x' } });
    expect(parseTaskRecord(JSON.parse(JSON.stringify(task)))).toEqual(task);
    expect(parseTaskRecord({ ...JSON.parse(JSON.stringify(task)), v: 2, somethingNew: true })).toEqual(task);
  });

  it('is unreadable, naming the field, when it does not fit', () => {
    expect(() => parseTaskRecord({ ...taskRecord(), delivery: { state: 'posted', attempts: 1, postingSince: 1 } })).toThrow(
      /task.delivery.messageId must be a string; task.delivery.video must be an object/,
    );
    expect(() => parseTaskRecord({ ...taskRecord(), v: -1 })).toThrow(/task.v must be a version number/);
  });
});

describe("an active task's marker written before sharding", () => {
  let directory: string | undefined;
  afterEach(() => {
    if (directory) rmSync(directory, { recursive: true, force: true });
  });

  it('names no guild: the worker of shard 0 resumes its task, and no other', async () => {
    directory = mkdtempSync(join(tmpdir(), 'markers-'));
    const url = `sqlite://${join(directory, 'bot.sqlite')}`;
    const writer = await openStore(url, silentLogger);
    await writer.collection('tasks_active', (raw) => raw).set('vold', true);
    await writer.close();
    const store = await openStore(url, silentLogger);
    try {
      const repository = new TaskRepository(store, silentLogger);
      const resumed = async (owns: (guildId: string) => boolean) => {
        const ids: string[] = [];
        for await (const id of repository.activeIds(owns)) ids.push(id);
        return ids;
      };
      expect(await resumed((guildId) => guildId === '0')).toEqual(['vold']);
      expect(await resumed((guildId) => guildId !== '0')).toEqual([]);
    } finally {
      await store.close();
    }
  });
});

describe("a message command's kept pick of the version before versions were counted", () => {
  let directory: string | undefined;
  afterEach(() => {
    if (directory) rmSync(directory, { recursive: true, force: true });
  });

  it('is found for its member, the same source', async () => {
    directory = mkdtempSync(join(tmpdir(), 'source-forms-'));
    const url = `sqlite://${join(directory, 'bot.sqlite')}`;
    const source = { url: 'https://cdn.discordapp.com/attachments/1/2/cat.png', filename: 'cat.png', contentType: 'image/png', size: 512 };
    const writer = await openStore(url, silentLogger);
    await writer.collection('video_source_forms', (raw) => raw).set('form1', { guildId: 'g', userId: 'u', source });
    await writer.close();
    const store = await openStore(url, silentLogger);
    try {
      const forms = new SourceForms(store);
      expect(await forms.find('form1', 'g', 'u')).toEqual(source);
      expect(await forms.find('form1', 'g', 'someone else')).toBeUndefined();
    } finally {
      await store.close();
    }
  });
});

describe('a stored video task of version 1', () => {
  it('has its amounts, named …Ticks then, read as USD ticks, and nothing else changed', () => {
    const current = parseTaskRecord(unversioned({ delivery: { state: 'waiting', nonce: NONCE, attempts: 0 } }));
    const { costUsdTicks, ...outcome } = current.outcome;
    const { estimateUsdTicks, ...reservation } = current.reservation ?? { estimateUsdTicks: 0, month: false };
    const versionOne = {
      ...current,
      v: 1,
      outcome: { ...outcome, costTicks: costUsdTicks },
      reservation: { ...reservation, estimateTicks: estimateUsdTicks },
    };
    expect(parseTaskRecord(JSON.parse(JSON.stringify(versionOne)))).toEqual(current);
  });
});
