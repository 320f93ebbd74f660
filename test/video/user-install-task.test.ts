import { describe, expect, it } from 'vitest';
import { ENGLISH, t } from '../../src/i18n/index.ts';
import { userInstallScope } from '../../src/ports/user-install.ts';
import { HANDOFF_LEAD_MS, handoffAt, handoffDue, parseTaskRecord, routingGuildId, taskMessageUrl } from '../../src/video/record.ts';
import { storageFilename } from '../../src/video/requests.ts';
import { knownCard, renderJobCard, renderStatusCard } from '../../src/video/status-card.ts';
import { cardButtons, cardText } from '../support/cards.ts';
import { shownInCard, taskRecord } from '../support/task-result.ts';

// A task made through a member's own install of the app: how it is kept (old records still read), which
// worker follows it, where its links point, and what its card says of whose key paid.

const MEMBER = '100000000000000003';
const ASKED_IN_GUILD = '100000000000000009';
const CHANNEL = '100000000000000002';
const DM = '100000000000000077';
const DM_MESSAGE = '100000000000000088';
const ORIGINAL = '100000000000000066';

const ownTask = (place: { guildId?: string; dmChannelId?: string; dmMessageId?: string; handedOff?: 'dms' | 'status' } = {}) =>
  taskRecord({
    guildId: userInstallScope(MEMBER),
    userId: MEMBER,
    channelId: CHANNEL,
    userInstall: place,
    card: { applicationId: 'app', interactionToken: 'token', tokenExpiresAt: 1, messageId: ORIGINAL },
  });

describe("a task of a member's own install", () => {
  it('is stored with where it was asked and read back so; a record of an earlier version has none', () => {
    const task = ownTask({ guildId: ASKED_IN_GUILD, dmChannelId: DM, dmMessageId: DM_MESSAGE });
    expect(parseTaskRecord(JSON.parse(JSON.stringify(task)))).toEqual(task);
    const { userInstall: _none, ...earlier } = taskRecord();
    expect(parseTaskRecord(JSON.parse(JSON.stringify(earlier))).userInstall).toBeUndefined();
  });

  it("is followed by the worker of the shard Discord sends its interactions to: the server's where it was asked, else shard 0's", () => {
    expect(routingGuildId(taskRecord())).toBe('100000000000000001');
    expect(routingGuildId(ownTask({ guildId: ASKED_IN_GUILD }))).toBe(ASKED_IN_GUILD);
    expect(routingGuildId(ownTask())).toBe('0');
  });

  it('links to its card where it was asked, or in the DMs once it went there, and stores its video under a plain file name', () => {
    expect(taskMessageUrl(ownTask({ guildId: ASKED_IN_GUILD }), ORIGINAL)).toBe(
      `https://discord.com/channels/${ASKED_IN_GUILD}/${CHANNEL}/${ORIGINAL}`,
    );
    expect(taskMessageUrl(ownTask(), ORIGINAL)).toBe(`https://discord.com/channels/@me/${CHANNEL}/${ORIGINAL}`);
    expect(taskMessageUrl(ownTask({ dmChannelId: DM, dmMessageId: DM_MESSAGE }), DM_MESSAGE)).toBe(
      `https://discord.com/channels/@me/${DM}/${DM_MESSAGE}`,
    );
    expect(storageFilename(userInstallScope(MEMBER), 'vabc')).toBe(`discord-user-install-${MEMBER}-vabc.mp4`);
  });

  it("says on its card that the operator's key paid, and carries no buttons, which need the server's install", () => {
    const posted = {
      ...ownTask(),
      state: 'succeeded' as const,
      delivery: shownInCard({ as: 'file', fileName: 'video-vabc123.mp4' }),
    };
    const card = renderStatusCard(posted, { now: 2 });
    expect(cardText(card)).toContain(t(ENGLISH, 'user-install.card.operator-key', { member: `<@${MEMBER}>` }));
    expect(cardButtons(card)).toEqual([]);
    const link = 'https://discord.com/channels/@me/1/2';
    expect(cardText(renderStatusCard(posted, { now: 2 }, { audience: 'channel', askedIn: link }))).toContain(
      t(ENGLISH, 'user-install.card.asked-in', { link }),
    );
    // A server's card says nothing of the sort, and keeps its buttons (the video's four, and Delete).
    const servers = renderStatusCard({ ...posted, guildId: ASKED_IN_GUILD, userInstall: undefined }, { now: 2 });
    expect(cardText(servers)).not.toContain(t(ENGLISH, 'user-install.card.operator-key', { member: `<@${MEMBER}>` }));
    expect(cardButtons(servers)).toHaveLength(5);
  });

  it('is known to the poller by its card in the DMs once there, and by its token alone before', () => {
    expect(knownCard(ownTask(), 0).card).toMatchObject({ interactionToken: 'token', messageId: undefined });
    expect(knownCard(ownTask({ dmChannelId: DM, dmMessageId: DM_MESSAGE }), 5)).toMatchObject({
      channelId: DM,
      card: { messageId: DM_MESSAGE, tokenExpiresAt: 0 },
    });
  });

  it("has its job's card handed off a minute before its token ends, once, from the stored token time", () => {
    const expiresAt = 15 * 60_000;
    const task = { ...ownTask(), card: { ...ownTask().card, tokenExpiresAt: expiresAt } };
    expect(handoffAt(task)).toBe(expiresAt - HANDOFF_LEAD_MS);
    expect(handoffDue(task, expiresAt - HANDOFF_LEAD_MS - 1)).toBe(false);
    expect(handoffDue(task, expiresAt - HANDOFF_LEAD_MS)).toBe(true);
    // Past the token nothing can be said there any more; handed off, or shown in the DMs, nothing is left to say.
    expect(handoffDue(task, expiresAt)).toBe(false);
    expect(handoffAt({ ...task, userInstall: { handedOff: 'dms' } })).toBeUndefined();
    expect(handoffAt({ ...task, userInstall: { dmChannelId: DM, dmMessageId: DM_MESSAGE } })).toBeUndefined();
    expect(handoffAt(taskRecord())).toBeUndefined();
    const handedOff = ownTask({ handedOff: 'status' });
    expect(parseTaskRecord(JSON.parse(JSON.stringify(handedOff)))).toEqual(handedOff);
    expect(() => parseTaskRecord({ ...JSON.parse(JSON.stringify(handedOff)), userInstall: { handedOff: 'later' } })).toThrow(/handedOff/);
  });

  it('says on its last edit where the videos still to come will be: their DMs, or /video status when those are closed', () => {
    const running = { ...ownTask(), state: 'running' as const };
    for (const note of ['dms', 'status'] as const) {
      const one = renderJobCard([running], { now: 2 }, { audience: 'channel', handoff: { note, pending: 1 } });
      expect(cardText(one)).toContain(t(ENGLISH, `user-install.card.handoff.${note}`, { count: 1 }));
      const two = renderJobCard([running, running], { now: 2 }, { audience: 'channel', handoff: { note, pending: 2 } });
      expect(cardText(two)).toContain(t(ENGLISH, `user-install.card.handoff.${note}`, { count: 2 }));
    }
    expect(t(ENGLISH, 'user-install.card.handoff.status', { count: 1 })).toContain('`/video status`');
    expect(cardText(renderStatusCard(running, { now: 2 }))).not.toContain(t(ENGLISH, 'user-install.card.handoff.dms', { count: 1 }));
  });
});
