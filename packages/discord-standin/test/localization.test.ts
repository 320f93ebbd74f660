import { once } from 'node:events';
import { Client, Events, GatewayIntentBits, REST, Routes, type Interaction } from 'discord.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDiscordStandIn, type DiscordStandIn, type TestGuild } from '../src/index.ts';
import { codesAt, refusal } from './refusals.ts';

// Commands in several languages and the languages of members and servers, as Discord has them, against
// the real discord.js: a registration that follows Discord's rules for localized names and descriptions is
// taken, one that breaks them is refused whole with 50035 and the path of each problem, and every
// interaction tells the member's language (`locale`) and the server's (`guild_locale`).

let discord: DiscordStandIn;
let guild: TestGuild;
let rest: REST;
let client: Client;

beforeAll(async () => {
  discord = await startDiscordStandIn();
  guild = discord.createGuild({ locale: 'fr' });
  rest = new REST({ api: discord.apiUrl }).setToken(discord.botToken);
  client = new Client({ intents: [GatewayIntentBits.Guilds], rest: { api: discord.apiUrl } });
  const ready = once(client, Events.ClientReady);
  await client.login(discord.botToken);
  await ready;
}, 30_000);

afterAll(async () => {
  await client?.destroy();
  await discord?.close();
});

const register = (commands: unknown[]) => rest.put(Routes.applicationGuildCommands(discord.applicationId, guild.id), { body: commands });

const GENERATE = {
  name: 'video',
  name_localizations: { de: 'video', fr: 'vidéo', 'es-ES': 'vídeo', 'pt-BR': 'vídeo', ja: '動画' },
  description: 'Make videos',
  description_localizations: { de: 'Videos erstellen', ja: '動画を作成します' },
  options: [
    {
      type: 1,
      name: 'generate',
      name_localizations: { de: 'erstellen', ja: '生成' },
      description: 'Generate a video',
      description_localizations: { fr: 'Générer une vidéo' },
      options: [
        {
          type: 4,
          name: 'duration',
          name_localizations: { 'pt-BR': 'duração', ja: '長さ' },
          description: 'Length',
          description_localizations: { 'es-ES': 'Duración', de: null },
          choices: [{ name: '5 seconds', name_localizations: { de: '5 Sekunden', ja: '5 秒' }, value: 5 }],
        },
      ],
    },
  ],
};
const ANIMATE = { type: 3, name: 'Animate image', name_localizations: { fr: "Animer l'image", ja: '画像をアニメーション化' } };

/** `GENERATE` with `change` made to a copy. */
function generateWith(change: (command: typeof GENERATE) => void): unknown {
  const copy = structuredClone(GENERATE);
  change(copy);
  return copy;
}

describe('registering localized commands', () => {
  it('takes names and descriptions in every Discord language, and keeps them as given', async () => {
    await register([GENERATE, ANIMATE]);
    const [video, animate] = discord.commands(guild.id);
    expect(video).toMatchObject({
      name_localizations: GENERATE.name_localizations,
      description_localizations: GENERATE.description_localizations,
    });
    expect(video?.options).toEqual(GENERATE.options);
    // A message command's name may have spaces, capitals and an apostrophe, in any language.
    expect(animate).toMatchObject({ type: 3, name_localizations: ANIMATE.name_localizations });
  });

  it('refuses a locale Discord does not have, naming it', async () => {
    const refused = await refusal(
      register([generateWith((command) => Object.assign(command.options[0]!.description_localizations, { pt_BR: 'Gerar' }))]),
    );
    expect(refused).toMatchObject({ status: 400, code: 50035 });
    expect(codesAt(refused.errors, 0, 'options', 0, 'description_localizations', 'pt_BR')).toEqual(['BASE_TYPE_CHOICES']);
  });

  it("refuses a slash command name that breaks Discord's rule in any language: capitals, spaces, over 32", async () => {
    const refused = await refusal(
      register([
        generateWith((command) => {
          command.name_localizations.de = 'Video';
          command.options[0]!.name_localizations.ja = '動画 生成';
          command.options[0]!.options[0]!.name_localizations['pt-BR'] = 'a'.repeat(33);
        }),
      ]),
    );
    expect(refused).toMatchObject({ status: 400, code: 50035 });
    // The command's own localized names are named as a whole, an option's by locale.
    expect(codesAt(refused.errors, 0, 'name_localizations')).toEqual(['APPLICATION_COMMAND_INVALID_NAME']);
    expect(codesAt(refused.errors, 0, 'options', 0, 'name_localizations', 'ja')).toEqual(['APPLICATION_COMMAND_INVALID_NAME']);
    expect(codesAt(refused.errors, 0, 'options', 0, 'options', 0, 'name_localizations', 'pt-BR')).toEqual(['BASE_TYPE_BAD_LENGTH']);
  });

  it('refuses descriptions and choice names out of 1 to 100 characters in any language, and a message command name over 32', async () => {
    const refused = await refusal(
      register([
        generateWith((command) => {
          command.description_localizations.de = '';
          command.options[0]!.options[0]!.description_localizations['es-ES'] = 'x'.repeat(101);
          command.options[0]!.options[0]!.choices[0]!.name_localizations.ja = '秒'.repeat(101);
        }),
        { ...ANIMATE, name_localizations: { de: 'Ein Bild in ein bewegtes Video verwandeln' } },
      ]),
    );
    expect(codesAt(refused.errors, 0, 'description_localizations', 'de')).toEqual(['BASE_TYPE_BAD_LENGTH']);
    expect(codesAt(refused.errors, 0, 'options', 0, 'options', 0, 'description_localizations', 'es-ES')).toEqual(['BASE_TYPE_BAD_LENGTH']);
    expect(codesAt(refused.errors, 0, 'options', 0, 'options', 0, 'choices', 0, 'name_localizations', 'ja')).toEqual([
      'BASE_TYPE_BAD_LENGTH',
    ]);
    expect(codesAt(refused.errors, 1, 'name_localizations', 'de')).toEqual(['BASE_TYPE_BAD_LENGTH']);
  });

  it('keeps the commands registered before a refused overwrite', async () => {
    await register([GENERATE]);
    await refusal(register([generateWith((command) => Object.assign(command.name_localizations, { klingon: 'vid' }))]));
    expect(discord.commands(guild.id).map((command) => command.name)).toEqual(['video']);
  });
});

describe("a member's language and the server's", () => {
  it('come with every interaction, as discord.js reads them', async () => {
    await register([GENERATE]);
    const german = discord.createUser({ guildId: guild.id, locale: 'de' });
    const seen = new Promise<Interaction>((resolve) => client.once(Events.InteractionCreate, resolve));
    const handle = discord.runCommand({
      user: german,
      guildId: guild.id,
      channelId: guild.textChannelId,
      command: 'video',
      subcommand: 'generate',
    });
    const interaction = await seen;
    expect({ locale: interaction.locale, guildLocale: interaction.guildLocale }).toEqual({ locale: 'de', guildLocale: 'fr' });
    expect(handle.interaction).toMatchObject({ authorizing_integration_owners: { '0': guild.id }, context: 0 });
    expect(client.guilds.cache.get(guild.id)?.preferredLocale).toBe('fr');
  });

  it('follow a member who picks another language, and are en-US unless a test says otherwise', async () => {
    const member = discord.createUser({ guildId: guild.id });
    const other = discord.createGuild();
    const first = discord.runCommand({
      user: member,
      guildId: guild.id,
      channelId: guild.textChannelId,
      command: 'video',
      subcommand: 'generate',
    });
    expect(first.interaction.locale).toBe('en-US');
    discord.setUserLocale(member.id, 'ja');
    const second = discord.runCommand({
      user: member,
      guildId: guild.id,
      channelId: guild.textChannelId,
      command: 'video',
      subcommand: 'generate',
    });
    expect(second.interaction.locale).toBe('ja');
    expect(() => discord.createGuild({ locale: 'pt-PT' })).toThrow(/not one of Discord's locale codes/);
    expect(() => discord.setUserLocale(member.id, 'en')).toThrow(/not one of Discord's locale codes/);
    await rest.put(Routes.applicationGuildCommands(discord.applicationId, other.id), { body: [GENERATE] });
    const elsewhere = discord.runCommand({
      user: other.member,
      guildId: other.id,
      channelId: other.textChannelId,
      command: 'video',
      subcommand: 'generate',
    });
    expect(elsewhere.interaction).toMatchObject({ locale: 'en-US', guild_locale: 'en-US' });
  });
});
