import {
  ActionRowBuilder,
  InteractionContextType,
  ModalBuilder,
  PermissionFlagsBits,
  SlashCommandBuilder,
  TextInputBuilder,
  TextInputStyle,
  type AutocompleteInteraction,
  type ChatInputCommandInteraction,
  type ModalSubmitInteraction,
} from 'discord.js';
import { answerPrivately, showForm, type AnswerVisibility } from '../src/discord/answer.ts';
import { containing, suggest } from '../src/discord/autocomplete.ts';
import { channelKind, missingPostPermissions } from '../src/discord/channels.ts';
import { subcommand } from '../src/discord/command-options.ts';
import { customId } from '../src/discord/custom-id.ts';
import { localized } from '../src/i18n/commands.ts';
import { t } from '../src/i18n/index.ts';
import { shorten } from '../src/lib/text.ts';
import type { Command } from '../src/interactions/command.ts';
import { guildOf, memberLocale, type HandledInteraction, type Requirement } from '../src/interactions/requirements.ts';
import type { Services } from '../src/services.ts';
import {
  CONFIG_COMMAND,
  CONFIG_SUBCOMMANDS as SUB,
  budgetChange,
  changesRules,
  checkDefaultModel,
  defaultsChange,
  layerChange,
  limitsChange,
  rolesChange,
  rulesChange,
  storageChange,
  type PickedChannel,
  type RulesGiven,
  type SettingsChangeRequest,
} from '../src/settings/config-options.ts';
import { keyNotice } from '../src/settings/service.ts';
import { describeChange, describeRules, describeUnavailableModel, showServerSettings } from '../src/interactions/settings-answers.ts';
import { word } from '../src/wording/notice.ts';

// /config: a server's own gateway key, layer, defaults, storage, access, limits, budgets and the moderators'
// rules. Manage Server only, by default and checked again here (server admins can change who sees the
// command). What each option means and accepts is the settings part's (src/settings/config-options.ts).

const KEY_MODAL = customId('config', 'key-modal');
const KEY_INPUT = 'key';

const data = localized(new SlashCommandBuilder().setName(CONFIG_COMMAND.name), 'command.config')
  .setContexts(InteractionContextType.Guild)
  .setDefaultMemberPermissions(PermissionFlagsBits.ManageGuild)
  .addSubcommand((sub) => subcommand(sub, SUB.key, 'command.config'))
  .addSubcommand((sub) => subcommand(sub, SUB.keyClear, 'command.config'))
  .addSubcommand((sub) => subcommand(sub, SUB.show, 'command.config'))
  .addSubcommand((sub) => subcommand(sub, SUB.layer, 'command.config'))
  .addSubcommand((sub) => subcommand(sub, SUB.defaults, 'command.config'))
  .addSubcommand((sub) => subcommand(sub, SUB.storage, 'command.config'))
  .addSubcommand((sub) => subcommand(sub, SUB.roles, 'command.config'))
  .addSubcommand((sub) => subcommand(sub, SUB.limits, 'command.config'))
  .addSubcommand((sub) => subcommand(sub, SUB.budget, 'command.config'))
  .addSubcommand((sub) => subcommand(sub, SUB.rules, 'command.config'));

async function key(interaction: ChatInputCommandInteraction, services: Services) {
  const locale = memberLocale(interaction);
  if (!services.settings.canStoreKeys) return answerPrivately(interaction, word(locale, keyNotice('noSecret')));
  const input = new TextInputBuilder()
    .setCustomId(KEY_INPUT)
    .setLabel(t(locale, 'config.key.form.label'))
    .setStyle(TextInputStyle.Short)
    .setRequired(true)
    .setMinLength(8)
    .setMaxLength(400);
  await showForm(
    interaction,
    new ModalBuilder()
      .setCustomId(KEY_MODAL)
      .setTitle(t(locale, 'config.key.form.title'))
      .addComponents(new ActionRowBuilder<TextInputBuilder>().addComponents(input)),
  );
}

/** Every subcommand and the key form are for server admins (the command is also hidden from others by default). */
function requires(interaction: HandledInteraction): Requirement {
  return interaction.isModalSubmit()
    ? { manageServer: true, what: (locale) => t(locale, 'requirement.what.gateway-key') }
    : { manageServer: true };
}

async function modal(interaction: ModalSubmitInteraction, services: Services) {
  if (interaction.customId !== KEY_MODAL) throw new Error(`unknown config modal ${interaction.customId}`);
  const locale = memberLocale(interaction);
  const result = await services.settings.setKey(guildOf(interaction), interaction.fields.getTextInputValue(KEY_INPUT), interaction.user.id);
  await answerPrivately(
    interaction,
    result.ok
      ? t(locale, 'config.key.saved', {
          lastFour: result.lastFour,
          models: result.models ?? 0,
          known: result.models === undefined ? 'no' : 'yes',
        })
      : word(locale, result.notice),
  );
}

/** The most of a change's words a "saved" follow-up quotes (a change can name a model of any length). */
const CHANGE_QUOTED = 300;

/**
 * Applies a change the settings part accepted, and answers with the settings as they are now. Once the
 * change is stored, the admin is told so whatever happens to that answer (it cannot be built, or Discord
 * refuses it): a short follow-up names the change, so they never read only that something went wrong.
 */
async function apply(interaction: ChatInputCommandInteraction, services: Services, request: SettingsChangeRequest) {
  const locale = memberLocale(interaction);
  if (!request.ok) return answerPrivately(interaction, word(locale, request.notice));
  const guildId = guildOf(interaction);
  const updated = await services.settings.update(guildId, interaction.user.id, request.description, request.change);
  // The first message says it was saved: only when that one fails is the admin told so apart.
  let toldSaved = false;
  try {
    const saved = request.note ? word(locale, request.note) : t(locale, 'config.saved');
    for (const message of await describeChange(services.settings, guildId, locale, saved, updated)) {
      await answerPrivately(interaction, message);
      toldSaved = true;
    }
  } catch (error) {
    if (toldSaved) {
      services.log.warn('a settings change was saved and said to be, but the rest of its answer failed', { guild: guildId, error });
      return;
    }
    services.log.warn('a settings change was saved, but its answer failed; telling the admin it was saved', { guild: guildId, error });
    await answerPrivately(interaction, t(locale, 'config.saved-unshown', { change: shorten(request.description, CHANGE_QUOTED) }));
  }
}

/** A model the server's key cannot use is refused now rather than on every /video; an unreachable gateway does not block the change. */
async function defaults(interaction: ChatInputCommandInteraction, services: Services, guildId: string) {
  const options = interaction.options;
  const locale = memberLocale(interaction);
  const request = defaultsChange({
    model: options.getString('model') ?? undefined,
    resolution: options.getString('resolution') ?? undefined,
    duration: options.getInteger('duration') ?? undefined,
    aspectRatio: options.getString('aspect_ratio') ?? undefined,
    buttons: options.getString('buttons') ?? undefined,
    variants: options.getInteger('variants') ?? undefined,
    ping: options.getString('ping') ?? undefined,
    reset: options.getBoolean('reset') === true,
  });
  const model = options.getString('model');
  if (request.ok && model !== null && options.getBoolean('reset') !== true) {
    const available = await services.models.videoModels(guildId).catch((error: unknown) => {
      services.log.warn('could not list the models to check a default model; accepting it unchecked', { guild: guildId, error });
      return undefined;
    });
    const unavailable = checkDefaultModel(model, available);
    if (unavailable) return answerPrivately(interaction, describeUnavailableModel(locale, unavailable));
  }
  return apply(interaction, services, request);
}

/**
 * The moderators' rules: changed by the options given, shown in full without any. What the bot may do in a
 * log channel and who owns the server are read from discord.js's cache (the Guilds intent keeps both).
 */
async function rules(interaction: ChatInputCommandInteraction, services: Services, guildId: string) {
  const options = interaction.options;
  const guild = interaction.guild;
  const picked = (name: string): PickedChannel | null => {
    const channel = options.getChannel(name);
    return channel ? { id: channel.id, kind: channelKind(channel.type) } : null;
  };
  const logChannel = picked('log_channel');
  const given: RulesGiven = {
    blockedWordsAdd: options.getString('blocked_words_add'),
    blockedWordsRemove: options.getString('blocked_words_remove'),
    blockedWordsClear: options.getBoolean('blocked_words_clear') === true,
    videoChannelAdd: picked('video_channel_add'),
    videoChannelRemove: options.getChannel('video_channel_remove')?.id ?? null,
    videoChannelsClear: options.getBoolean('video_channels_clear') === true,
    deny: options.getUser('deny')?.id ?? null,
    allow: options.getUser('allow')?.id ?? null,
    logChannel: logChannel && { ...logChannel, missing: guild ? missingPostPermissions(guild, logChannel.id) : [] },
    clearLogChannel: options.getBoolean('clear_log_channel') === true,
  };
  const current = await services.settings.rules(guildId);
  if (!changesRules(given)) {
    for (const message of describeRules(memberLocale(interaction), current)) await answerPrivately(interaction, message);
    return;
  }
  return apply(interaction, services, rulesChange(given, { by: interaction.user.id, ownerId: guild?.ownerId, current }));
}

async function execute(interaction: ChatInputCommandInteraction, services: Services) {
  const guildId = guildOf(interaction);
  const options = interaction.options;
  const by = interaction.user.id;
  const locale = memberLocale(interaction);
  switch (options.getSubcommand()) {
    case 'key':
      return key(interaction, services);
    case 'key-clear': {
      const cleared = await services.settings.clearKey(guildId, by);
      return answerPrivately(interaction, t(locale, cleared ? 'config.key.removed' : 'config.key.none-to-remove'));
    }
    case 'show':
      for (const message of await showServerSettings(services.settings, guildId, locale)) await answerPrivately(interaction, message);
      return;
    case 'layer':
      return apply(interaction, services, layerChange(options.getString('layer', true)));
    case 'defaults':
      return defaults(interaction, services, guildId);
    case 'storage':
      return apply(interaction, services, storageChange(options.getInteger('keep_days', true), options.getBoolean('public_link') ?? false));
    case 'roles':
      return apply(
        interaction,
        services,
        rolesChange(options.getString('feature', true), options.getString('action', true), options.getRole('role')?.id),
      );
    case 'limits':
      return apply(
        interaction,
        services,
        limitsChange({
          concurrentPerUser: options.getInteger('concurrent_per_user'),
          dailyPerUser: options.getInteger('daily_per_user'),
          dailyPerServer: options.getInteger('daily_per_server'),
          keyConcurrency: options.getInteger('key_concurrency'),
        }),
      );
    case 'budget':
      return apply(
        interaction,
        services,
        budgetChange({
          member_daily_usd: options.getNumber('member_daily_usd'),
          server_daily_usd: options.getNumber('server_daily_usd'),
          server_monthly_usd: options.getNumber('server_monthly_usd'),
          confirm_over_usd: options.getNumber('confirm_over_usd'),
          alertChannelId: options.getChannel('alert_channel')?.id ?? null,
          clearAlertChannel: options.getBoolean('clear_alert_channel') === true,
        }),
      );
    case 'rules':
      return rules(interaction, services, guildId);
    default:
      throw new Error(`unknown /config subcommand ${options.getSubcommand()}`);
  }
}

async function autocomplete(interaction: AutocompleteInteraction, services: Services) {
  const models = interaction.guildId ? await services.models.suggested(interaction.guildId, 'video') : [];
  await suggest(interaction, containing(models, interaction.options.getFocused()));
}

/** `/config key` opens a form; everything else answers the admin privately. */
function answers(interaction: HandledInteraction): AnswerVisibility | 'form' {
  return interaction.isChatInputCommand() && interaction.options.getSubcommand() === 'key' ? 'form' : 'private';
}

export default { data, requires, answers, execute, autocomplete, modal } satisfies Command;
