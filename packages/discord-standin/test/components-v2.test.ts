import { once } from 'node:events';
import {
  ActionRowBuilder,
  AttachmentBuilder,
  ButtonBuilder,
  ButtonStyle,
  Client,
  ComponentType,
  ContainerBuilder,
  Events,
  FileBuilder,
  FileUploadBuilder,
  GatewayIntentBits,
  LabelBuilder,
  MediaGalleryBuilder,
  MediaGalleryItemBuilder,
  MessageFlags,
  ModalBuilder,
  SectionBuilder,
  SeparatorBuilder,
  SlashCommandBuilder,
  StringSelectMenuBuilder,
  StringSelectMenuOptionBuilder,
  TextDisplayBuilder,
  TextInputBuilder,
  TextInputStyle,
  ThumbnailBuilder,
  type APIModalInteractionResponseCallbackData,
  type Interaction,
  type JSONEncodable,
  type Message as DiscordMessage,
  type TextChannel,
} from 'discord.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDiscordStandIn, type DiscordStandIn, type Message, type TestGuild } from '../src/index.ts';
import { codesAt, refusal, type Refusal } from './refusals.ts';

// Components V2 and forms that take files, as Discord checks them, against the real discord.js client:
// what the stand-in accepts it stores as Discord does, and what Discord refuses comes back as a
// DiscordAPIError with 50035 and the path of the field, on every route that makes or edits a message.

const V2 = MessageFlags.IsComponentsV2;
const CLIP = Buffer.from('000000186674797069736f6d0000020069736f6d69736f32', 'hex');
const UPLOAD_LIMIT = 4096;
const STILL = Buffer.from('89504e470d0a1a0a', 'hex');

let discord: DiscordStandIn;
let guild: TestGuild;
let client: Client;
/** What the next interaction should do; each test sets it. */
let onInteraction: (interaction: Interaction) => Promise<void> = async () => {};

beforeAll(async () => {
  discord = await startDiscordStandIn();
  guild = discord.createGuild({ attachmentSizeLimit: UPLOAD_LIMIT });
  client = new Client({ intents: [GatewayIntentBits.Guilds], rest: { api: discord.apiUrl } });
  client.on(Events.InteractionCreate, (interaction) => {
    void onInteraction(interaction);
  });
  const ready = once(client, Events.ClientReady);
  await client.login(discord.botToken);
  await ready;
  await client.application!.commands.set([new SlashCommandBuilder().setName('card').setDescription('a card').toJSON()], guild.id);
}, 30_000);

afterAll(async () => {
  await client?.destroy();
  await discord?.close();
});

function channel(): TextChannel {
  const found = client.channels.cache.get(guild.textChannelId);
  if (!found?.isSendable() || found.isDMBased()) throw new Error('no text channel');
  return found as TextChannel;
}

function stored(id: string): Message {
  const message = discord.messages(guild.textChannelId).find((candidate) => candidate.id === id);
  if (!message) throw new Error(`no message ${id} in the stand-in`);
  return message;
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

const text = (content: string) => ({ type: ComponentType.TextDisplay as const, content });
const gallery = (urls: string[]) => ({ type: ComponentType.MediaGallery as const, items: urls.map((url) => ({ media: { url } })) });
const container = (...components: unknown[]) => ({ type: ComponentType.Container as const, components });
const button = (customId: string) => ({
  type: ComponentType.Button as const,
  style: ButtonStyle.Primary as const,
  custom_id: customId,
  label: 'Go',
});

/**
 * A modal as raw JSON, as a bot without discord.js's builders sends it: the builders refuse these shapes
 * before they leave the process, and the point is what Discord answers.
 */
function rawModal(data: Record<string, unknown>): JSONEncodable<APIModalInteractionResponseCallbackData> {
  return { toJSON: () => data as unknown as APIModalInteractionResponseCallbackData };
}

/** A valid card: one container with a line of text. */
function card(line: string) {
  return new ContainerBuilder().addTextDisplayComponents(new TextDisplayBuilder().setContent(line));
}

/** Runs /card and lets the bot answer it with `answer`; resolves with what `answer` returned. */
function onCard<T>(answer: (interaction: Interaction) => Promise<T>): {
  result: Promise<T>;
  run: ReturnType<DiscordStandIn['runCommand']>;
} {
  const result = new Promise<T>((resolve, reject) => {
    onInteraction = async (interaction) => {
      if (!interaction.isChatInputCommand()) return;
      try {
        resolve(await answer(interaction));
      } catch (error) {
        reject(asError(error));
      }
    };
  });
  const run = discord.runCommand({ user: guild.member, guildId: guild.id, channelId: guild.textChannelId, command: 'card' });
  return { result, run };
}

describe('Components V2 messages in a channel', () => {
  it('accepts a card of every layout and content component, stores its uploads behind attachment:// and discord.js reads it back', async () => {
    const sent = await channel().send({
      flags: V2,
      files: [
        new AttachmentBuilder(CLIP, { name: 'clip.mp4' }),
        new AttachmentBuilder(STILL, { name: 'still.png' }),
        new AttachmentBuilder(Buffer.from('notes'), { name: 'notes.txt' }),
      ],
      components: [
        new ContainerBuilder()
          .setAccentColor(0x5865f2)
          .addTextDisplayComponents(new TextDisplayBuilder().setContent('## A lighthouse at dusk'))
          .addSectionComponents(
            new SectionBuilder()
              .addTextDisplayComponents(new TextDisplayBuilder().setContent('Model: sora · 8 s · 480p'))
              .setThumbnailAccessory(new ThumbnailBuilder().setURL('attachment://still.png')),
          )
          .addSeparatorComponents(new SeparatorBuilder())
          .addMediaGalleryComponents(
            new MediaGalleryBuilder().addItems(
              new MediaGalleryItemBuilder().setURL('attachment://clip.mp4'),
              new MediaGalleryItemBuilder().setURL('https://example.com/take-2.mp4'),
            ),
          )
          .addFileComponents(new FileBuilder().setURL('attachment://notes.txt'))
          .addActionRowComponents(
            new ActionRowBuilder<ButtonBuilder>().addComponents(
              new ButtonBuilder().setCustomId('card:extend').setLabel('Extend').setStyle(ButtonStyle.Primary),
            ),
          ),
        new SectionBuilder()
          .addTextDisplayComponents(new TextDisplayBuilder().setContent('Regenerate?'))
          .setButtonAccessory(new ButtonBuilder().setCustomId('card:again').setLabel('Again').setStyle(ButtonStyle.Secondary)),
      ],
    });
    expect(sent.flags.has(V2)).toBe(true);
    expect(sent.content).toBe('');
    expect(sent.components.map((component) => component.type)).toEqual([ComponentType.Container, ComponentType.Section]);

    // As Discord answers it: the attachment:// reference replaced by the attachment's own url and id.
    const clip = sent.attachments.find((attachment) => attachment.name === 'clip.mp4')!;
    const items = JSON.stringify(stored(sent.id).components);
    expect(items).toContain(JSON.stringify({ url: clip.url, proxy_url: clip.url, content_type: clip.contentType, attachment_id: clip.id }));
    expect(items).not.toContain('attachment://');
    expect(Buffer.from(await (await fetch(clip.url)).arrayBuffer())).toEqual(CLIP);
  });

  it('refuses content, embeds, stickers and a poll with the flag: 50035 naming each field', async () => {
    const refused = await refusal(channel().send({ flags: V2, content: 'hello', embeds: [{ title: 'old' }], components: [card('hi')] }));
    expect(refused).toMatchObject({ status: 400, code: 50035 });
    expect(codesAt(refused.errors, 'content')).toEqual(['MESSAGE_CANNOT_USE_LEGACY_FIELDS_WITH_COMPONENTS_V2']);
    expect(codesAt(refused.errors, 'embeds')).toEqual(['MESSAGE_CANNOT_USE_LEGACY_FIELDS_WITH_COMPONENTS_V2']);
    const poll = await refusal(
      channel().send({
        flags: V2,
        components: [card('vote')],
        poll: { question: { text: 'q' }, answers: [{ text: 'a' }], duration: 1, allowMultiselect: false },
      }),
    );
    expect(codesAt(poll.errors, 'poll')).toEqual(['MESSAGE_CANNOT_USE_LEGACY_FIELDS_WITH_COMPONENTS_V2']);
  });

  it('counts every component in the tree: 40 go through, a 41st is refused', async () => {
    // A container and 39 text displays: 40 components.
    const forty = container(...Array.from({ length: 39 }, (_, index) => text(`line ${index}`)));
    await expect(channel().send({ flags: V2, components: [forty] })).resolves.toBeDefined();
    const refused = await refusal(channel().send({ flags: V2, components: [forty, text('one more')] }));
    expect(refused.code).toBe(50035);
    expect(codesAt(refused.errors, 'components')).toEqual(['COMPONENT_MAX_TOTAL_COMPONENTS_EXCEEDED']);
    // A section counts itself, its text and its accessory: 13 of them in two containers make 41.
    const sections = Array.from({ length: 13 }, (_, index) => ({
      type: ComponentType.Section,
      components: [text('t')],
      accessory: button(`b${index}`),
    }));
    const nested = await refusal(
      channel().send({ flags: V2, components: [container(...sections.slice(0, 7)), container(...sections.slice(7))] }),
    );
    expect(codesAt(nested.errors, 'components')).toEqual(['COMPONENT_MAX_TOTAL_COMPONENTS_EXCEEDED']);
  });

  it('allows 4000 characters across all text displays and refuses 4001', async () => {
    await expect(
      channel().send({ flags: V2, components: [text('a'.repeat(2000)), container(text('b'.repeat(2000)))] }),
    ).resolves.toBeDefined();
    const refused = await refusal(channel().send({ flags: V2, components: [text('a'.repeat(2000)), container(text('b'.repeat(2001)))] }));
    expect(refused.code).toBe(50035);
    expect(codesAt(refused.errors, 'components')).toEqual(['COMPONENT_MAX_TOTAL_TEXT_LENGTH_EXCEEDED']);
  });

  it('takes a media gallery of 1 to 10 items, and refuses 0 and 11', async () => {
    const urls = (count: number) => Array.from({ length: count }, (_, index) => `https://example.com/${index}.png`);
    await expect(channel().send({ flags: V2, components: [gallery(urls(1)), gallery(urls(10))] })).resolves.toBeDefined();
    for (const count of [0, 11]) {
      const refused = await refusal(channel().send({ flags: V2, components: [container(text('takes'), gallery(urls(count)))] }));
      expect(refused.code).toBe(50035);
      expect(codesAt(refused.errors, 'components', 0, 'components', 1, 'items')).toEqual(['BASE_TYPE_BAD_LENGTH']);
    }
  });

  it('refuses an attachment:// name that no file of the request carries, and a file component with a web url', async () => {
    const missing = await refusal(
      channel().send({
        flags: V2,
        files: [new AttachmentBuilder(CLIP, { name: 'clip.mp4' })],
        components: [gallery(['attachment://other.mp4'])],
      }),
    );
    expect(missing.code).toBe(50035);
    expect(codesAt(missing.errors, 'components', 0, 'items', 0, 'media', 'url')).toEqual(['UNFURLED_MEDIA_ITEM_ATTACHMENT_NOT_FOUND']);
    const web = await refusal(
      channel().send({ flags: V2, components: [{ type: ComponentType.File, file: { url: 'https://example.com/a.txt' } }] }),
    );
    expect(codesAt(web.errors, 'components', 0, 'file', 'url')).toEqual(['UNFURLED_MEDIA_ITEM_ATTACHMENT_ONLY']);
  });

  it('refuses a section without an accessory or with four texts, and components where they may not sit', async () => {
    const bare = await refusal(channel().send({ flags: V2, components: [{ type: ComponentType.Section, components: [text('alone')] }] }));
    expect(bare.code).toBe(50035);
    expect(codesAt(bare.errors, 'components', 0, 'accessory')).toEqual(['BASE_TYPE_REQUIRED']);
    const four = await refusal(
      channel().send({
        flags: V2,
        components: [{ type: ComponentType.Section, components: ['1', '2', '3', '4'].map(text), accessory: button('s') }],
      }),
    );
    expect(codesAt(four.errors, 'components', 0, 'components')).toEqual(['BASE_TYPE_BAD_LENGTH']);
    const nested = await refusal(channel().send({ flags: V2, components: [container(container(text('inside')))] }));
    expect(codesAt(nested.errors, 'components', 0, 'components', 0)).toEqual(['UNION_TYPE_CHOICES']);
    const loose = await refusal(channel().send({ flags: V2, components: [button('top')] }));
    expect(codesAt(loose.errors, 'components', 0)).toEqual(['UNION_TYPE_CHOICES']);
  });

  it('without the flag keeps the old rules: action rows only at the top, at most five', async () => {
    const refused = await refusal(channel().send({ components: [card('no flag')] }));
    expect(refused.code).toBe(50035);
    expect(codesAt(refused.errors, 'components', 0)).toEqual(['UNION_TYPE_CHOICES']);
    const row = (index: number) => ({ type: ComponentType.ActionRow, components: [button(`row${index}`)] });
    await expect(channel().send({ content: 'rows', components: [1, 2, 3, 4, 5].map(row) })).resolves.toBeDefined();
    const six = await refusal(channel().send({ content: 'rows', components: [1, 2, 3, 4, 5, 6].map(row) }));
    expect(codesAt(six.errors, 'components')).toEqual(['BASE_TYPE_MAX_LENGTH']);
  });

  it('keeps the flag once set: an edit cannot remove it, nor bring content back', async () => {
    const sent = await channel().send({ flags: V2, components: [card('first')] });
    const removed = await refusal(sent.edit({ content: 'plain again', flags: [] }));
    expect(removed.code).toBe(50035);
    expect(codesAt(removed.errors, 'flags')).toEqual(['MESSAGE_CANNOT_REMOVE_COMPONENTS_V2_FLAG']);
    const content = await refusal(sent.edit({ content: 'plain again' }));
    expect(codesAt(content.errors, 'content')).toEqual(['MESSAGE_CANNOT_USE_LEGACY_FIELDS_WITH_COMPONENTS_V2']);
    const edited = await sent.edit({ components: [card('second')] });
    expect(edited.flags.has(V2)).toBe(true);
    expect(JSON.stringify(stored(sent.id).components)).toContain('second');
  });

  it('turns a message into Components V2 only when the edit empties its content', async () => {
    const sent = await channel().send({ content: 'working on it' });
    const kept = await refusal(sent.edit({ flags: V2, components: [card('done')] }));
    expect(codesAt(kept.errors, 'content')).toEqual(['MESSAGE_CANNOT_USE_LEGACY_FIELDS_WITH_COMPONENTS_V2']);
    const edited = await sent.edit({ content: null, flags: V2, components: [card('done')] });
    expect(edited.flags.has(V2)).toBe(true);
    expect(stored(sent.id).content).toBe('');
  });

  it('lets an edit name a file the message already has, and refuses it once the edit drops that file', async () => {
    const sent = await channel().send({
      flags: V2,
      files: [new AttachmentBuilder(CLIP, { name: 'clip.mp4' })],
      components: [gallery(['attachment://clip.mp4'])],
    });
    const clip = sent.attachments.first()!;
    const again = await sent.edit({ components: [container(text('still here'), gallery(['attachment://clip.mp4']))] });
    expect(again.attachments.first()?.id).toBe(clip.id);
    expect(JSON.stringify(stored(sent.id).components)).toContain(clip.id);
    const dropped = await refusal(sent.edit({ attachments: [], components: [gallery(['attachment://clip.mp4'])] }));
    expect(codesAt(dropped.errors, 'components', 0, 'items', 0, 'media', 'url')).toEqual(['UNFURLED_MEDIA_ITEM_ATTACHMENT_NOT_FOUND']);
  });
});

describe('asking without sending', () => {
  it('answers with the errors Discord would give a body, or none', async () => {
    const body = { flags: V2, components: [container(text('a take'), gallery(['attachment://take.mp4']))] };
    expect(discord.messageErrors(body, { filenames: ['take.mp4'] })).toBeUndefined();
    expect(codesAt(discord.messageErrors(body), 'components', 0, 'components', 1, 'items', 0, 'media', 'url')).toEqual([
      'UNFURLED_MEDIA_ITEM_ATTACHMENT_NOT_FOUND',
    ]);
    const sent = await channel().send({
      flags: V2,
      files: [new AttachmentBuilder(CLIP, { name: 'take.mp4' })],
      components: [card('first')],
    });
    expect(discord.messageErrors({ components: body.components }, { editing: stored(sent.id) })).toBeUndefined();
    expect(codesAt(discord.messageErrors({ flags: 0, content: 'x' }, { editing: stored(sent.id) }), 'flags')).toEqual([
      'MESSAGE_CANNOT_REMOVE_COMPONENTS_V2_FLAG',
    ]);
  });
});

describe('Components V2 in interaction responses', () => {
  it('checks the reply, a follow-up, the edit of @original and of a follow-up, each refusal under its own path', async () => {
    const { result, run } = onCard(async (interaction) => {
      if (!interaction.isChatInputCommand()) throw new Error('not /card');
      const reply = await refusal(interaction.reply({ flags: V2, content: 'no', components: [card('reply')] }));
      await interaction.reply({ flags: V2, components: [card('the reply')] });
      const followUp = await refusal(interaction.followUp({ flags: V2, components: [gallery([])] }));
      const sentFollowUp = await interaction.followUp({ flags: V2, components: [card('a follow-up')] });
      const original = await refusal(interaction.editReply({ flags: [], components: [card('plain')] }));
      const editedFollowUp = await refusal(
        interaction.editReply({ message: sentFollowUp, components: [container(text('x'.repeat(4001)))] }),
      );
      const edited = await interaction.editReply({ components: [card('the reply, edited')] });
      return { reply, followUp, original, editedFollowUp, edited: edited.flags.has(V2) };
    });
    const outcome = await result;
    // An interaction response's data sits under `data`; the webhook routes take the message itself.
    expect(outcome.reply.code).toBe(50035);
    expect(codesAt(outcome.reply.errors, 'data', 'content')).toEqual(['MESSAGE_CANNOT_USE_LEGACY_FIELDS_WITH_COMPONENTS_V2']);
    expect(codesAt(outcome.followUp.errors, 'components', 0, 'items')).toEqual(['BASE_TYPE_BAD_LENGTH']);
    expect(codesAt(outcome.original.errors, 'flags')).toEqual(['MESSAGE_CANNOT_REMOVE_COMPONENTS_V2_FLAG']);
    expect(codesAt(outcome.editedFollowUp.errors, 'components')).toEqual(['COMPONENT_MAX_TOTAL_TEXT_LENGTH_EXCEEDED']);
    expect(outcome.edited).toBe(true);
    expect(JSON.stringify((await run.reply()).components)).toContain('the reply, edited');
  });

  it('ignores the flag on a deferred reply, so the edit that fills it must carry the flag itself', async () => {
    const { result } = onCard(async (interaction) => {
      if (!interaction.isChatInputCommand()) throw new Error('not /card');
      await interaction.deferReply();
      const unflagged = await refusal(interaction.editReply({ components: [card('done')] }));
      const filled = await interaction.editReply({ flags: V2, components: [card('done')] });
      return { unflagged, flags: filled.flags.bitfield };
    });
    const outcome = await result;
    expect(codesAt(outcome.unflagged.errors, 'components', 0)).toEqual(['UNION_TYPE_CHOICES']);
    expect(outcome.flags & V2).toBe(V2);
  });

  it('checks an update of the message a button sits on against that message: the flag stays', async () => {
    const sent = await channel().send({
      flags: V2,
      components: [container(text('pick'), { type: ComponentType.ActionRow, components: [button('card:pick')] })],
    });
    const updated = new Promise<{ refused: Refusal; after: DiscordMessage }>((resolve, reject) => {
      onInteraction = async (interaction) => {
        if (!interaction.isButton()) return;
        try {
          const refused = await refusal(interaction.update({ content: 'picked' }));
          const response = await interaction.update({ components: [card('picked')], withResponse: true });
          resolve({ refused, after: response.resource!.message! });
        } catch (error) {
          reject(asError(error));
        }
      };
    });
    discord.clickButton({ user: guild.member, message: stored(sent.id), customId: 'card:pick' });
    const { refused, after } = await updated;
    expect(codesAt(refused.errors, 'data', 'content')).toEqual(['MESSAGE_CANNOT_USE_LEGACY_FIELDS_WITH_COMPONENTS_V2']);
    expect(after.flags.has(V2)).toBe(true);
    expect(JSON.stringify(stored(sent.id).components)).toContain('picked');
  });
});

describe('forms with labels and file uploads', () => {
  function form() {
    return new ModalBuilder()
      .setCustomId('card:extend-form')
      .setTitle('Extend a video')
      .addLabelComponents(
        new LabelBuilder()
          .setLabel('The video')
          .setDescription('An .mp4 up to the upload limit')
          .setFileUploadComponent(new FileUploadBuilder().setCustomId('clip').setMinValues(1).setMaxValues(2)),
        new LabelBuilder()
          .setLabel('Aspect ratio')
          .setStringSelectMenuComponent(
            new StringSelectMenuBuilder()
              .setCustomId('ratio')
              .addOptions(
                new StringSelectMenuOptionBuilder().setLabel('16:9').setValue('16:9'),
                new StringSelectMenuOptionBuilder().setLabel('9:16').setValue('9:16').setDefault(true),
              ),
          ),
        new LabelBuilder()
          .setLabel('Prompt')
          .setTextInputComponent(new TextInputBuilder().setCustomId('prompt').setStyle(TextInputStyle.Paragraph)),
      );
  }

  /** Runs /card, which shows the form. */
  async function showForm(): Promise<ReturnType<DiscordStandIn['runCommand']>> {
    onInteraction = async (interaction) => {
      if (interaction.isChatInputCommand()) await interaction.showModal(form());
    };
    const run = discord.runCommand({ user: guild.member, guildId: guild.id, channelId: guild.textChannelId, command: 'card' });
    expect(await run.modal()).toEqual({ customId: 'card:extend-form', inputs: ['clip', 'ratio', 'prompt'] });
    return run;
  }

  it('delivers the uploaded file, the select and the text of a submitted form as discord.js reads them', async () => {
    await showForm();
    const read = new Promise<Record<string, unknown>>((resolve, reject) => {
      onInteraction = async (interaction) => {
        if (!interaction.isModalSubmit()) return;
        try {
          const files = interaction.fields.getUploadedFiles('clip', true);
          const clip = files.first()!;
          const bytes = Buffer.from(await (await fetch(clip.url)).arrayBuffer());
          await interaction.reply({ flags: V2 | MessageFlags.Ephemeral, components: [card(`got ${clip.name}`)] });
          resolve({
            count: files.size,
            file: { name: clip.name, size: clip.size, contentType: clip.contentType, ephemeral: clip.ephemeral, bytes },
            ratio: interaction.fields.getStringSelectValues('ratio'),
            prompt: interaction.fields.getTextInputValue('prompt'),
            field: interaction.fields.getField('clip', ComponentType.FileUpload).type,
            layout: interaction.fields.components.map((component) => component.type),
          });
        } catch (error) {
          reject(asError(error));
        }
      };
    });
    const submit = discord.submitModal({
      user: guild.member,
      guildId: guild.id,
      channelId: guild.textChannelId,
      customId: 'card:extend-form',
      fields: { prompt: 'keep flying' },
      files: { clip: [{ filename: 'clip.mp4', bytes: CLIP, contentType: 'video/mp4' }] },
      selects: { ratio: ['16:9'] },
    });
    expect(await read).toEqual({
      count: 1,
      file: { name: 'clip.mp4', size: CLIP.length, contentType: 'video/mp4', ephemeral: true, bytes: CLIP },
      ratio: ['16:9'],
      prompt: 'keep flying',
      field: ComponentType.FileUpload,
      layout: [ComponentType.Label, ComponentType.Label, ComponentType.Label],
    });
    // As Discord sends it: labels in the form's order, the upload's values resolved as ephemeral attachments.
    const data = submit.interaction.data;
    expect(data).toMatchObject({
      custom_id: 'card:extend-form',
      components: [
        { type: 18, component: { type: 19, custom_id: 'clip' } },
        { type: 18, component: { type: 3, custom_id: 'ratio', values: ['16:9'] } },
        { type: 18, component: { type: 4, custom_id: 'prompt', value: 'keep flying' } },
      ],
    });
    expect(JSON.stringify(data)).toContain('/ephemeral-attachments/');
    expect(JSON.stringify((await submit.reply()).components)).toContain('got clip.mp4');
  });

  it('lets a member submit only what the form allows', async () => {
    await showForm();
    const base = {
      user: guild.member,
      guildId: guild.id,
      channelId: guild.textChannelId,
      customId: 'card:extend-form',
      selects: { ratio: ['16:9'] },
    };
    const file = { filename: 'clip.mp4', bytes: CLIP, contentType: 'video/mp4' };
    expect(() => discord.submitModal({ ...base })).toThrow('the form requires clip');
    expect(() => discord.submitModal({ ...base, files: { clip: [file, file, file] } })).toThrow('clip takes 1-2 files, not 3');
    expect(() => discord.submitModal({ ...base, files: { prompt: [file] } })).toThrow('the form shown has no file upload prompt');
    expect(() => discord.submitModal({ ...base, files: { clip: [file] }, selects: { ratio: ['4:3'] } })).toThrow('offers no option 4:3');
    const big = { ...file, bytes: Buffer.alloc(UPLOAD_LIMIT + 1) };
    expect(() => discord.submitModal({ ...base, files: { clip: [big] } })).toThrow("over the server's upload limit");
  });

  it("refuses a modal over Discord's limits with 50035 under data, and shows none", async () => {
    const label = (customId: string) => ({
      type: ComponentType.Label,
      label: 'File',
      component: { type: ComponentType.FileUpload, custom_id: customId },
    });
    const cases: [Record<string, unknown>, (string | number)[], string][] = [
      [{ custom_id: 'f', title: 'x'.repeat(46), components: [label('a')] }, ['title'], 'BASE_TYPE_MAX_LENGTH'],
      [{ custom_id: 'f', title: 'Six', components: ['a', 'b', 'c', 'd', 'e', 'f'].map(label) }, ['components'], 'BASE_TYPE_BAD_LENGTH'],
      [{ custom_id: 'f', title: 'None', components: [] }, ['components'], 'BASE_TYPE_BAD_LENGTH'],
      [
        { custom_id: 'f', title: 'Long id', components: [label('x'.repeat(101))] },
        ['components', 0, 'component', 'custom_id'],
        'BASE_TYPE_MAX_LENGTH',
      ],
      [
        {
          custom_id: 'f',
          title: 'Min 0',
          components: [{ ...label('a'), component: { type: ComponentType.FileUpload, custom_id: 'a', min_values: 0 } }],
        },
        ['components', 0, 'component', 'min_values'],
        'NUMBER_TYPE_OUT_OF_RANGE',
      ],
      [
        {
          custom_id: 'f',
          title: 'Eleven',
          components: [{ ...label('a'), component: { type: ComponentType.FileUpload, custom_id: 'a', max_values: 11 } }],
        },
        ['components', 0, 'component', 'max_values'],
        'NUMBER_TYPE_OUT_OF_RANGE',
      ],
      [
        { custom_id: 'f', title: 'Long label', components: [{ ...label('a'), label: 'x'.repeat(46) }] },
        ['components', 0, 'label'],
        'BASE_TYPE_MAX_LENGTH',
      ],
      [{ custom_id: 'f', title: 'Gallery', components: [gallery(['https://example.com/a.png'])] }, ['components', 0], 'UNION_TYPE_CHOICES'],
    ];
    for (const [modal, path, code] of cases) {
      const { result, run } = onCard(async (interaction) => {
        if (!interaction.isChatInputCommand()) throw new Error('not /card');
        return refusal(interaction.showModal(rawModal(modal)));
      });
      const refused = await result;
      expect(refused.code).toBe(50035);
      expect(codesAt(refused.errors, 'data', ...path)).toContain(code);
      expect(run.record.callbacks).toEqual([]);
    }
  });
});
