import { keepLines } from '../support/kept-lines.ts';
import { once } from 'node:events';
import { ButtonStyle, Client, ComponentType, Events, GatewayIntentBits, MessageFlags, REST, SlashCommandBuilder } from 'discord.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CardEdit, DiscordOutbox, type InteractionMessage } from '../../src/discord/outbox.ts';
import { createLogger } from '../../src/lib/log.ts';
import { isRecord, readArray, readString, type JsonRecord } from '../../src/lib/json.ts';
import { type DiscordStandIn, type Message, startDiscordStandIn, type TestGuild } from 'discord-standin';
import { resolveLocale } from '../../src/i18n/index.ts';

const FRENCH = resolveLocale('fr', undefined, 'member');

// A card or an edit the background services send that Discord would refuse whole (400 / 50035) is not
// sent as it is: the message says, in its reader's language, that it was too long to show, and the log
// names the limit (or the fields Discord named, when Discord refuses it all the same). discord.js's
// REST client against the stand-in, which refuses what Discord refuses.

const TOO_LONG = {
  en: "This answer is too long for Discord to show, so it was not sent. If it keeps happening, tell the bot's operator.",
  fr: 'Cette réponse est trop longue pour que Discord l’affiche, elle n’a donc pas été envoyée. Si cela se reproduit, préviens l’opérateur du bot.',
};

let discord: DiscordStandIn;
let guild: TestGuild;
let client: Client;
let outbox: DiscordOutbox;
const logged: JsonRecord[] = [];
/** The interactions the client deferred, newest last, as the outbox addresses their reply. */
const deferred: InteractionMessage[] = [];
let nextDeferral = Promise.withResolvers<void>();

beforeAll(async () => {
  discord = await startDiscordStandIn();
  guild = discord.createGuild();
  const log = createLogger({ write: keepLines(logged) });
  outbox = new DiscordOutbox(new REST({ api: discord.apiUrl }).setToken(discord.botToken), { log });
  client = new Client({ intents: [GatewayIntentBits.Guilds], rest: { api: discord.apiUrl } });
  client.on(Events.InteractionCreate, (interaction) => {
    if (!interaction.isChatInputCommand()) return;
    void interaction.deferReply().then(() => {
      deferred.push({ applicationId: interaction.applicationId, interactionToken: interaction.token, messageId: '@original' });
      nextDeferral.resolve();
    });
  });
  const ready = once(client, Events.ClientReady);
  await client.login(discord.botToken);
  await ready;
  await client.application!.commands.set([new SlashCommandBuilder().setName('card').setDescription('a deferred answer').toJSON()]);
}, 30_000);

afterAll(async () => {
  await client?.destroy();
  await discord?.close();
});

/** A public "thinking…" reply, as /video leaves one for its card; its address for the outbox, and the stand-in's record. */
async function deferredAnswer() {
  nextDeferral = Promise.withResolvers<void>();
  const run = discord.runCommand({ user: guild.member, guildId: guild.id, channelId: guild.textChannelId, command: 'card' });
  await nextDeferral.promise;
  return { address: deferred.at(-1)!, run };
}

/** A card whose text is `text`. */
function card(text: string, extra: Partial<CardEdit> = {}): CardEdit {
  return {
    flags: MessageFlags.IsComponentsV2,
    components: [{ type: ComponentType.Container, components: [{ type: ComponentType.TextDisplay, content: text }] }],
    ...extra,
  };
}

/** Every text display's text in a message, in order. */
function textOf(message: Message | undefined): string[] {
  const walk = (component: unknown): string[] => [
    ...(isRecord(component) && component.type === ComponentType.TextDisplay ? [readString(component, 'content') ?? ''] : []),
    ...(readArray(component, 'components') ?? []).flatMap(walk),
  ];
  return (message?.components ?? []).flatMap(walk);
}

function linesAbout(text: string): JsonRecord[] {
  return logged.filter((line) => typeof line.msg === 'string' && line.msg.includes(text));
}

describe('a card over a Discord limit', () => {
  it('posted: the channel reads, in the card’s language, that it was too long, and the log names the limit once', async () => {
    const before = linesAbout('status card over a Discord limit').length;
    const posted = await outbox.postCard(guild.textChannelId, card('x'.repeat(4001), { locale: FRENCH }));
    const message = discord.state.messages.get(posted.messageId);
    expect(textOf(message)).toEqual([TOO_LONG.fr]);
    const lines = linesAbout('status card over a Discord limit').slice(before);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 'warn', field: 'components', limit: 'cardText', actual: 4001, max: 4000 });
    expect(JSON.stringify(lines[0])).not.toContain('xxx');
  });

  it('edited through the interaction token: the reply becomes the notice, not Discord’s refusal', async () => {
    const { address, run } = await deferredAnswer();
    const edited = await outbox.editCard(
      { ...address, tokenExpiresAt: Date.now() + 60_000, channelId: guild.textChannelId, messageId: undefined },
      card('y'.repeat(5000)),
    );
    expect(edited?.messageId).toBe(run.record.original?.id);
    expect(textOf(run.record.original)).toEqual([TOO_LONG.en]);
  });

  it('edited as a channel message after the token: the notice keeps the card’s earlier files', async () => {
    const posted = await outbox.postCard(guild.textChannelId, card('a card that fits'));
    const address = {
      applicationId: '0',
      interactionToken: 'gone',
      tokenExpiresAt: 0,
      channelId: guild.textChannelId,
      messageId: posted.messageId,
    };
    await outbox.editCard(address, card('z'.repeat(4001)));
    expect(textOf(discord.state.messages.get(posted.messageId))).toEqual([TOO_LONG.en]);
  });

  it('that Discord refuses all the same (a button label over 80): the notice stands for it, the log names Discord’s field', async () => {
    const before = linesAbout('Discord refused a status card').length;
    const refused = card('a card with a long button');
    refused.components.push({
      type: ComponentType.ActionRow,
      components: [{ type: ComponentType.Button, style: ButtonStyle.Secondary, custom_id: 'video:again', label: 'b'.repeat(81) }],
    });
    const posted = await outbox.postCard(guild.textChannelId, refused);
    expect(textOf(discord.state.messages.get(posted.messageId))).toEqual([TOO_LONG.en]);
    const lines = linesAbout('Discord refused a status card').slice(before);
    expect(lines).toHaveLength(1);
    expect(lines[0]?.fields).toEqual(['components.1.components.0.label: BASE_TYPE_MAX_LENGTH']);
  });
});

describe('an answer edited through its token over a Discord limit', () => {
  it('content over 2,000 characters: the answer becomes the notice in the reader’s language', async () => {
    const { address, run } = await deferredAnswer();
    await outbox.editInteractionMessage(address, { content: 'c'.repeat(2001) }, FRENCH);
    expect(run.record.original?.content).toBe(TOO_LONG.fr);
    expect(linesAbout('answer edit over a Discord limit').at(-1)).toMatchObject({ field: 'content', limit: 'content', actual: 2001 });
  });

  it('an embed over 4,096 characters, or embeds over 6,000 together: the notice, within every limit', async () => {
    for (const embeds of [[{ description: 'd'.repeat(4097) }], [{ description: 'd'.repeat(4000) }, { description: 'e'.repeat(2001) }]]) {
      const { address, run } = await deferredAnswer();
      await outbox.editInteractionMessage(address, { content: 'fits', embeds });
      expect(run.record.original).toMatchObject({ content: TOO_LONG.en, embeds: [] });
    }
    expect(linesAbout('answer edit over a Discord limit').slice(-2)).toMatchObject([
      { field: 'embeds.0.description', limit: 'embedDescription', actual: 4097, max: 4096 },
      { field: 'embeds', limit: 'embedTotal', actual: 6001, max: 6000 },
    ]);
  });

  it('within the limits: sent as it is', async () => {
    const { address, run } = await deferredAnswer();
    await outbox.editInteractionMessage(address, { content: 'c'.repeat(2000) });
    expect(run.record.original?.content).toBe('c'.repeat(2000));
  });
});
