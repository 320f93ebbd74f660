import {
  ChannelType,
  InteractionContextType,
  SlashCommandBuilder,
  type AutocompleteInteraction,
  type ButtonInteraction,
  type ChatInputCommandInteraction,
} from 'discord.js';
import { answerPrivately } from '../src/discord/answer.ts';
import type { Command } from '../src/interactions/command.ts';
import { guildOf, memberLocale, type HandledInteraction, type Requirement } from '../src/interactions/requirements.ts';
import { containing, suggest } from '../src/discord/autocomplete.ts';
import { BUILT_IN_VOICES } from '../src/gateway/spec.ts';
import type { Services } from '../src/services.ts';
import { callEncryptionNotice } from '../src/voice/call-encryption.ts';
import { HEAR_ME_BUTTON } from '../src/voice/service.ts';
import { subcommand } from '../src/discord/command-options.ts';
import { localized } from '../src/i18n/commands.ts';
import { resolveLocale, t } from '../src/i18n/index.ts';
import { describeVoiceSettingsChange, voiceSettingsChange, VOICE_SETTINGS_SUBCOMMAND } from '../src/settings/voice-settings.ts';
import { shorten } from '../src/lib/text.ts';

/** The most of a change's words a "saved" follow-up quotes. */
const SAVED_CHANGE_QUOTED = 300;
import { describeVoiceSettings } from '../src/interactions/settings-answers.ts';
import { word } from '../src/wording/notice.ts';

const data = localized(new SlashCommandBuilder().setName('voice'), 'command.voice')
  .setContexts(InteractionContextType.Guild)
  .addSubcommand((sub) =>
    localized(sub.setName('join'), 'command.voice.join').addChannelOption((option) =>
      localized(option.setName('channel'), 'command.voice.join.channel').addChannelTypes(
        ChannelType.GuildVoice,
        ChannelType.GuildStageVoice,
      ),
    ),
  )
  .addSubcommand((sub) => localized(sub.setName('leave'), 'command.voice.leave'))
  .addSubcommand((sub) => subcommand(sub, VOICE_SETTINGS_SUBCOMMAND, 'command.voice'))
  .addSubcommand((sub) => localized(sub.setName('ignore-me'), 'command.voice.ignore-me'))
  .addSubcommand((sub) => localized(sub.setName('listen-to-me'), 'command.voice.listen-to-me'))
  .addSubcommand((sub) => localized(sub.setName('forget-me'), 'command.voice.forget-me'));

/**
 * Joining follows the server's role rules for /voice; anyone may look at the settings, admins change them.
 * Anyone may decide whether the bot hears them, a member the moderators denied included.
 */
function requires(interaction: HandledInteraction): Requirement {
  if (interaction.isButton()) return { inServer: true, evenDenied: true };
  if (!interaction.isChatInputCommand()) return { inServer: true };
  const subcommand = interaction.options.getSubcommand();
  if (subcommand === 'ignore-me' || subcommand === 'listen-to-me' || subcommand === 'forget-me')
    return { inServer: true, evenDenied: true };
  if (subcommand === 'join') return { feature: 'voice' };
  const changes = interaction.options.data.find((option) => option.name === subcommand)?.options ?? [];
  if (subcommand === 'settings' && changes.length > 0)
    return { manageServer: true, what: (locale) => t(locale, 'requirement.what.voice-settings') };
  return { inServer: true };
}

async function join(interaction: ChatInputCommandInteraction, services: Services) {
  // The bot has every server it is in cached (the Guilds intent), and the dispatcher let this through only in one.
  if (!interaction.inCachedGuild()) throw new Error('/voice join reached its handler outside a cached server');
  const chosen = interaction.options.getChannel('channel');
  const channelId = chosen?.id ?? interaction.member.voice.channelId;
  const locale = memberLocale(interaction);
  if (!channelId) return answerPrivately(interaction, t(locale, 'voice.join.no-channel'));
  const result = await services.voice.join(interaction.guildId, channelId, interaction.channelId, interaction.user.id);
  // A refusal the voice part words for the server (a spent budget) is in the server's language, as its channels read it.
  const refusalLocale = result.ok || result.audience !== 'channel' ? locale : resolveLocale(undefined, interaction.guildLocale, 'channel');
  if (!result.ok) {
    services.settings.moderationLog.refused({
      guildId: interaction.guildId,
      userId: interaction.user.id,
      what: 'voice',
      why: result.notice,
    });
    return answerPrivately(interaction, word(refusalLocale, result.notice));
  }
  const channel = `<#${channelId}>`;
  await answerPrivately(
    interaction,
    result.alreadyThere
      ? t(locale, 'voice.join.already', { channel })
      : `${t(locale, 'voice.join.joined', { channel })} ${word(locale, callEncryptionNotice(result.encryption))}`,
  );
}

async function leave(interaction: ChatInputCommandInteraction, services: Services) {
  const left = await services.voice.leave(guildOf(interaction), { why: 'asked', by: interaction.user.id });
  await answerPrivately(interaction, t(memberLocale(interaction), left ? 'voice.leave.left' : 'voice.leave.not-in'));
}

/** Anyone may have the bot forget what they said in voice on the server: the answer says what went, privately. */
async function forgetMe(interaction: ChatInputCommandInteraction, services: Services) {
  const forgotten = await services.voice.forgetMember(guildOf(interaction), interaction.user.id);
  await answerPrivately(interaction, t(memberLocale(interaction), 'voice.forget.done', forgotten));
}

/** What the options mean and accept is the settings part's (src/settings/voice-settings.ts). */
async function settings(interaction: ChatInputCommandInteraction, services: Services) {
  const guildId = guildOf(interaction);
  const options = interaction.options;
  const locale = memberLocale(interaction);
  const request = voiceSettingsChange(
    {
      voice: options.getString('voice'),
      instructions: options.getString('instructions'),
      model: options.getString('model'),
      turnDetection: options.getString('turn_detection'),
      vadThreshold: options.getNumber('vad_threshold'),
      silenceMs: options.getInteger('silence_ms'),
      transcripts: options.getBoolean('transcripts'),
      idleMinutes: options.getInteger('idle_minutes'),
      respond: options.getString('respond'),
      wakeWords: options.getString('wake_words'),
      tools: options.getBoolean('tools'),
      language: options.getString('language'),
      consent: options.getString('consent'),
    },
    services.config.gatewayVendor,
  );
  if (!request.ok) return answerPrivately(interaction, word(locale, request.notice));
  if (Object.keys(request.change).length === 0) {
    return answerPrivately(interaction, describeVoiceSettings(locale, await services.settings.voiceSettings(guildId)));
  }
  // Recorded in the server's change history (/config show) with who and when, in the same step.
  const updated = await services.settings.changeVoiceSettings(guildId, request.change, interaction.user.id);
  // Once stored, the admin is told so whatever happens to the answer that shows the settings.
  try {
    const note = services.voice.isIn(guildId) ? `\n${t(locale, 'voice.settings.next-join')}` : '';
    await answerPrivately(interaction, `${t(locale, 'config.saved')}\n${describeVoiceSettings(locale, updated)}${note}`);
  } catch (error) {
    services.log.warn('voice settings were saved, but their answer failed; telling the admin they were saved', { guild: guildId, error });
    const change = shorten(describeVoiceSettingsChange(request.change), SAVED_CHANGE_QUOTED);
    await answerPrivately(interaction, t(locale, 'voice.settings.saved-unshown', { change }));
  }
}

/** The member asks not to be heard, anywhere; the private answer says how to undo it. */
async function ignoreMe(interaction: ChatInputCommandInteraction, services: Services) {
  const locale = memberLocale(interaction);
  const result = await services.voice.ignoreMe(interaction.user.id);
  if (!result.ok) return answerPrivately(interaction, word(locale, result.notice));
  const listenToMe = await services.mentions.mention(interaction.guildId ?? undefined, 'voice listen-to-me');
  await answerPrivately(interaction, t(locale, 'voice.ignore-me.done', { listenToMe }));
}

/** The member asks to be heard (here in opt-in conversations too), by the command or the join message's button. */
async function listenToMe(interaction: ChatInputCommandInteraction | ButtonInteraction, services: Services) {
  const locale = memberLocale(interaction);
  const result = await services.voice.listenToMe(guildOf(interaction), interaction.user.id);
  if (!result.ok) return answerPrivately(interaction, word(locale, result.notice));
  const ignoreMe = await services.mentions.mention(interaction.guildId ?? undefined, 'voice ignore-me');
  await answerPrivately(interaction, t(locale, 'voice.listen-to-me.done', { ignoreMe }));
}

async function button(interaction: ButtonInteraction, services: Services) {
  if (interaction.customId !== HEAR_ME_BUTTON) throw new Error(`unknown /voice button ${interaction.customId}`);
  await listenToMe(interaction, services);
}

async function autocomplete(interaction: AutocompleteInteraction, services: Services) {
  const focused = interaction.options.getFocused(true);
  const typed = focused.value.toLowerCase();
  let names: string[] = [];
  if (focused.name === 'voice') names = BUILT_IN_VOICES.filter((voice) => voice.startsWith(typed));
  if (focused.name === 'model') {
    const vendor = services.config.gatewayVendor.toLowerCase();
    const models = interaction.guildId ? await services.models.suggested(interaction.guildId, 'any') : [];
    names = containing(models, typed).filter((model) => model.toLowerCase().startsWith(`${vendor}-voice-`));
  }
  await suggest(interaction, names);
}

async function execute(interaction: ChatInputCommandInteraction, services: Services) {
  switch (interaction.options.getSubcommand()) {
    case 'join':
      return join(interaction, services);
    case 'leave':
      return leave(interaction, services);
    case 'forget-me':
      return forgetMe(interaction, services);
    case 'settings':
      return settings(interaction, services);
    case 'ignore-me':
      return ignoreMe(interaction, services);
    case 'listen-to-me':
      return listenToMe(interaction, services);
    default:
      throw new Error(`unknown /voice subcommand ${interaction.options.getSubcommand()}`);
  }
}

export default { data, requires, execute, autocomplete, button } satisfies Command;
