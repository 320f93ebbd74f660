import { describe, expect, it } from 'vitest';
import { PERMISSIONS, type Message } from 'discord-standin';
import { cardButtons, cardText, galleryItems } from '../support/cards.ts';
import { EPHEMERAL, REPLY, UPDATE, isDone, videoRefOf, videoWorld } from '../support/video-e2e.ts';

// A finished card's Delete button (issue 36, "A member's own card"): its member, or anyone with Manage
// Messages, deletes the card after a private confirm; anyone else is told privately whose card it is. The
// task stays in the member's list, which says its card was deleted.

describe("a finished card's Delete button", () => {
  const e2e = videoWorld();

  /** The custom id of the card's Delete button. */
  function deleteId(card: Message): string {
    const id = cardButtons(card).find((button) => button.label === 'Delete')?.customId;
    if (!id) throw new Error('the card has no Delete button');
    return id;
  }

  function buttonIds(message: Message): string[] {
    return [...JSON.stringify(message.components).matchAll(/"custom_id":"([^"]+)"/g)].map((match) => match[1]!);
  }

  it('is not on a card still running, and comes once the video is done, once per card', async () => {
    const run = e2e.video('generate', { prompt: `a paper boat ${Math.random()}` });
    const running = await run.waitForReply((card) => cardText(card).includes('**Generating'), 15_000);
    expect(cardButtons(running).map((button) => button.label)).not.toContain('Delete');
    const done = await run.waitForReply(isDone, 20_000);
    expect(cardButtons(done).map((button) => button.label)).toEqual(['Extend', 'Edit', 'Regenerate', 'Change and regenerate', 'Delete']);
    expect(deleteId(done)).toBe(`video:delete:${videoRefOf(done)}`);
  });

  it('refuses another member privately, naming whose card it is, and leaves the card', async () => {
    const { discord, guild } = e2e.world;
    const run = e2e.video('generate', { prompt: `a lighthouse ${Math.random()}` });
    const card = await run.waitForReply(isDone, 20_000);
    // The admin manages the server, but not its messages: it is not theirs to delete.
    const refused = await discord.clickButton({ user: guild.admin, message: card, customId: deleteId(card) }).response();
    expect(refused).toMatchObject({
      type: REPLY,
      data: {
        flags: EPHEMERAL,
        content: `This is <@${guild.member.id}>'s card: only they or a member with Manage Messages can delete it.`,
      },
    });
    expect(run.record.original?.deleted).toBeFalsy();
    expect(discord.messages(guild.textChannelId).some((message) => message.id === card.id)).toBe(true);
  });

  it("lets a member with Manage Messages delete another member's card, and the card says nothing more", async () => {
    const { discord, guild } = e2e.world;
    const role = discord.createRole(guild.id, { name: 'Moderators', permissions: PERMISSIONS.manageMessages });
    const moderator = discord.createUser({ guildId: guild.id, name: 'moderator', roles: [role] });
    const run = e2e.video('generate', { prompt: `something unwelcome ${Math.random()}` });
    const card = await run.waitForReply(isDone, 20_000);
    const ref = videoRefOf(card);
    const question = await discord.clickButton({ user: moderator, message: card, customId: deleteId(card) }).reply();
    expect(question.flags & EPHEMERAL).toBe(EPHEMERAL);
    const confirmed = await discord.clickButton({ user: moderator, message: question, customId: `video:delete-confirm:${ref}` }).response();
    expect(String(confirmed.data.content)).toMatch(/^Deleted: the card is gone\./);
    expect(run.record.original?.deleted).toBe(true);
    const status = await e2e.video('status', { task: ref }).reply();
    expect(cardText(status)).toContain(`Its card was deleted by <@${moderator.id}>.`);
  });

  it("deletes the one card of a job of variants, with a single Delete under every variant's row", async () => {
    const { discord, guild } = e2e.world;
    const run = e2e.video('generate', { prompt: `two kites ${Math.random()}`, variants: 2 });
    const card = await run.waitForReply((reply) => galleryItems(reply).length === 2, 30_000);
    expect(cardButtons(card).filter((button) => button.label === 'Delete')).toHaveLength(1);
    const ref = deleteId(card).replace('video:delete:', '');
    const question = await discord.clickButton({ user: guild.member, message: card, customId: deleteId(card) }).reply();
    await discord.clickButton({ user: guild.member, message: question, customId: `video:delete-confirm:${ref}` }).response();
    expect(run.record.original?.deleted).toBe(true);
    const lines = (await e2e.video('list').reply()).content.split('\n').filter((line) => line.includes('two kites'));
    expect(lines).toHaveLength(2);
    for (const line of lines) expect(line).toContain('card deleted');
  }, 40_000);

  it('asks its member privately first: Keep leaves the card, Delete the card deletes it and the task forgets it', async () => {
    const { discord, guild } = e2e.world;
    const prompt = `a glass of water ${Math.random()}`;
    const run = e2e.video('generate', { prompt });
    const card = await run.waitForReply(isDone, 20_000);
    const ref = videoRefOf(card);

    const first = discord.clickButton({ user: guild.member, message: card, customId: deleteId(card) });
    const question = await first.reply();
    expect(question.flags & EPHEMERAL).toBe(EPHEMERAL);
    expect(question.content).toBe('**Delete this card?** Everyone in the channel loses it and its video; this cannot be undone.');
    expect(buttonIds(question)).toEqual([`video:delete-confirm:${ref}`, `video:delete-keep:${ref}`]);
    const kept = await discord.clickButton({ user: guild.member, message: question, customId: `video:delete-keep:${ref}` }).response();
    expect(kept).toMatchObject({ type: UPDATE, data: { content: 'Kept: the card stays as it is.', components: [] } });
    expect(run.record.original?.deleted).toBeFalsy();

    const again = await discord.clickButton({ user: guild.member, message: card, customId: deleteId(card) }).reply();
    const confirmed = await discord.clickButton({ user: guild.member, message: again, customId: `video:delete-confirm:${ref}` }).response();
    expect(confirmed).toMatchObject({
      type: UPDATE,
      data: { content: 'Deleted: the card is gone. `/video list` still lists the video.', components: [] },
    });
    expect(run.record.original?.deleted).toBe(true);
    expect(discord.messages(guild.textChannelId).some((message) => message.id === card.id)).toBe(false);
    expect(discord.requests.filter((request) => request.method === 'DELETE' && request.path.endsWith(`/messages/${card.id}`))).toHaveLength(
      1,
    );

    // A second confirm finds it gone, and deletes nothing more.
    const late = await discord.clickButton({ user: guild.member, message: again, customId: `video:delete-confirm:${ref}` }).response();
    expect(String(late.data.content)).toBe('This card was already deleted.');

    // The task is still the member's: the list says its card was deleted, and its private view links to no message.
    const list = await e2e.video('list').reply();
    const line = list.content.split('\n').find((entry) => entry.includes(ref));
    expect(line).toContain('**done** · card deleted');
    const status = await e2e.video('status', { task: ref }).reply();
    expect(cardText(status)).toContain(`Its card was deleted by <@${guild.member.id}>.`);
    expect(cardText(status)).toContain('**Done**');
    expect(JSON.stringify(status.components)).not.toContain(card.id);
  });
});
