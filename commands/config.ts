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
import { answerPrivately, type Placeholder } from '../src/discord/answer.ts';
import { containing, suggest } from '../src/discord/autocomplete.ts';
import { customId } from '../src/discord/custom-id.ts';
import type { Command } from '../src/interactions/command.ts';
import { guildOf, type HandledInteraction, type Requirement } from '../src/interactions/requirements.ts';
import { ASPECT_RATIOS, GENERATION_DURATION, LAYERS, RESOLUTIONS } from '../src/gateway/spec.ts';
import type { Services } from '../src/services.ts';
import { FEATURES, RESULT_BUTTONS, STORAGE_MAX_DAYS, type GuildSettings } from '../src/settings/guild-settings.ts';
import { MESSAGES } from '../src/settings/service.ts';

// /config: a server's own gateway key, layer, defaults, storage, access and limits. Manage Server only,
// by default and checked again here (server admins can change who sees the command).

const KEY_MODAL = customId('config', 'key-modal');
const KEY_INPUT = 'key';
const MAX_LIMIT = 10_000;

const data = new SlashCommandBuilder()
  .setName('config')
  .setDescription('Server settings for the video and voice bot (Manage Server)')
  .setContexts(InteractionContextType.Guild)
  .setDefaultMemberPermissions(PermissionFlagsBits.ManageGuild)
  .addSubcommand((sub) => sub.setName('key').setDescription("Set this server's gateway key (asked in a private form)"))
  .addSubcommand((sub) => sub.setName('key-clear').setDescription("Remove this server's gateway key"))
  .addSubcommand((sub) => sub.setName('show').setDescription("This server's settings"))
  .addSubcommand((sub) =>
    sub
      .setName('layer')
      .setDescription('Which gateway layer new tasks use')
      .addStringOption((option) => option.setName('layer').setDescription('compat (/v1) or native (/native/v1)').setRequired(true).addChoices(...LAYERS.map((layer) => ({ name: layer, value: layer })))),
  )
  .addSubcommand((sub) =>
    sub
      .setName('defaults')
      .setDescription('Defaults for /video, and who may press the buttons under a video')
      .addStringOption((option) => option.setName('model').setDescription('Default video model').setAutocomplete(true))
      .addStringOption((option) => option.setName('resolution').setDescription('Default resolution').addChoices(...RESOLUTIONS.map((value) => ({ name: value, value }))))
      .addIntegerOption((option) => option.setName('duration').setDescription('Default length in seconds').setMinValue(GENERATION_DURATION.min).setMaxValue(GENERATION_DURATION.max))
      .addStringOption((option) => option.setName('aspect_ratio').setDescription('Default aspect ratio').addChoices(...ASPECT_RATIOS.map((value) => ({ name: value, value }))))
      .addStringOption((option) =>
        option
          .setName('buttons')
          .setDescription('Who may press Extend, Edit and Regenerate under a video (default: anyone)')
          .addChoices({ name: 'anyone', value: 'anyone' }, { name: 'owner: only the member who made the video', value: 'owner' }),
      )
      .addBooleanOption((option) => option.setName('reset').setDescription('Forget all defaults')),
  )
  .addSubcommand((sub) =>
    sub
      .setName('storage')
      .setDescription("Keep videos in the gateway's storage")
      .addIntegerOption((option) => option.setName('keep_days').setDescription(`Days to keep each video (0 = not kept, at most ${STORAGE_MAX_DAYS})`).setRequired(true).setMinValue(0).setMaxValue(STORAGE_MAX_DAYS))
      .addBooleanOption((option) => option.setName('public_link').setDescription('Also make a public link (used when a video is too big to upload)')),
  )
  .addSubcommand((sub) =>
    sub
      .setName('roles')
      .setDescription('Who may use /video or /voice (no roles = everyone)')
      .addStringOption((option) => option.setName('feature').setDescription('Which command').setRequired(true).addChoices(...FEATURES.map((feature) => ({ name: `/${feature}`, value: feature }))))
      .addStringOption((option) =>
        option.setName('action').setDescription('What to do').setRequired(true).addChoices({ name: 'allow a role', value: 'add' }, { name: 'stop allowing a role', value: 'remove' }, { name: 'allow everyone', value: 'clear' }),
      )
      .addRoleOption((option) => option.setName('role').setDescription('The role (for allow / stop allowing)')),
  )
  .addSubcommand((sub) =>
    sub
      .setName('limits')
      .setDescription('How much members may use (0 = no limit)')
      .addIntegerOption((option) => option.setName('concurrent_per_user').setDescription('Videos in progress at once, per member').setMinValue(0).setMaxValue(MAX_LIMIT))
      .addIntegerOption((option) => option.setName('daily_per_user').setDescription('Videos per member per day (UTC)').setMinValue(0).setMaxValue(MAX_LIMIT))
      .addIntegerOption((option) => option.setName('daily_per_server').setDescription('Videos per server per day (UTC)').setMinValue(0).setMaxValue(MAX_LIMIT)),
  );

/**
 * `/config show`'s first line: what stands between this server and a working bot, in one look (a gateway
 * key for /video and /voice, the operator's encryption secret for a key of the server's own), or that
 * nothing does.
 */
async function missingLine(services: Services, guildId: string): Promise<string> {
  const missing: string[] = [];
  const access = await services.settings.resolveGatewayAccess(guildId);
  if (!access.ok) missing.push('a gateway key: `/video` and `/voice` cannot work until a server admin sets one with `/config key`');
  if (!services.settings.canStoreKeys) missing.push("the bot's encryption secret: the operator has not set KEY_ENCRYPTION_SECRET, so no server can store a key of its own");
  return missing.length === 0 ? '**Missing:** nothing; `/video` and `/voice` are ready to use.' : `**Missing:** ${missing.join('; ')}.`;
}

async function describe(settings: GuildSettings, services: Services, guildId: string): Promise<string> {
  const roles = (ids: string[]) => (ids.length === 0 ? 'everyone' : ids.map((id) => `<@&${id}>`).join(', '));
  const limit = (value: number) => (value === 0 ? 'no limit' : String(value));
  const { defaults, storage, limits } = settings;
  return [
    await missingLine(services, guildId),
    `**Gateway key in use:** ${await services.settings.describeKeyInUse(guildId)}`,
    `**Layer:** ${settings.layer ?? `${services.config.gatewayLayer} (the operator's default)`}`,
    `**Defaults:** model ${defaults.model ?? 'latest'}, ${defaults.resolution ?? 'gateway default'} resolution, ${defaults.duration === undefined ? 'gateway default' : `${defaults.duration} s`}, aspect ratio ${defaults.aspectRatio ?? 'gateway default'}`,
    `**Buttons under a video** (Extend, Edit, Regenerate): ${defaults.buttons === 'owner' ? 'only the member who made the video may press them' : 'anyone may press them'}`,
    `**Storage:** ${storage.keepDays === 0 ? 'videos are not kept beyond the temporary link' : `kept ${storage.keepDays} days`}${storage.publicLink ? ', with a public link' : ''}`,
    `**Who may use /video:** ${roles(settings.roles.video)}; **/voice:** ${roles(settings.roles.voice)}`,
    `**Limits:** ${limit(limits.concurrentPerUser)} in progress per member, ${limit(limits.dailyPerUser)} a day per member, ${limit(limits.dailyPerServer)} a day for the server`,
    settings.history.length > 0
      ? `**Recent changes:**\n${settings.history.slice(0, 5).map((entry) => `<t:${Math.floor(entry.at / 1000)}:R> <@${entry.by}> ${entry.change}`).join('\n')}`
      : '',
  ]
    .filter((line) => line !== '')
    .join('\n');
}

async function key(interaction: ChatInputCommandInteraction, services: Services) {
  if (!services.settings.canStoreKeys) return answerPrivately(interaction, MESSAGES.noSecret);
  const input = new TextInputBuilder().setCustomId(KEY_INPUT).setLabel('Gateway API key').setStyle(TextInputStyle.Short).setRequired(true).setMinLength(8).setMaxLength(400);
  await interaction.showModal(new ModalBuilder().setCustomId(KEY_MODAL).setTitle('Gateway key for this server').addComponents(new ActionRowBuilder<TextInputBuilder>().addComponents(input)));
}

/** Every subcommand and the key form are for server admins (the command is also hidden from others by default). */
function requires(interaction: HandledInteraction): Requirement {
  return interaction.isModalSubmit() ? { manageServer: true, what: 'Setting the gateway key' } : { manageServer: true };
}

async function modal(interaction: ModalSubmitInteraction, services: Services) {
  if (interaction.customId !== KEY_MODAL) throw new Error(`unknown config modal ${interaction.customId}`);
  const result = await services.settings.setKey(guildOf(interaction), interaction.fields.getTextInputValue(KEY_INPUT), interaction.user.id);
  await answerPrivately(
    interaction,
    result.ok
      ? `Key saved (…${result.lastFour})${result.models === undefined ? '' : `; it can use ${result.models} models`}. It is stored encrypted and will not be shown again. \`/config key-clear\` removes it.`
      : result.message,
  );
}

async function roles(interaction: ChatInputCommandInteraction, services: Services, guildId: string) {
  const feature = FEATURES.find((candidate) => candidate === interaction.options.getString('feature', true));
  const action = interaction.options.getString('action', true);
  const roleId = interaction.options.getRole('role')?.id;
  if (!feature) return answerPrivately(interaction, '`feature` must be video or voice.');
  let description: string;
  let next: (current: string[]) => string[];
  if (action === 'clear') {
    description = `allowed everyone on /${feature}`;
    next = () => [];
  } else if (roleId === undefined) {
    return answerPrivately(interaction, '`role`: pick the role to allow or stop allowing.');
  } else if (action === 'add') {
    description = `allowed <@&${roleId}> on /${feature}`;
    next = (current) => [...new Set([...current, roleId])];
  } else if (action === 'remove') {
    description = `stopped allowing <@&${roleId}> on /${feature}`;
    next = (current) => current.filter((id) => id !== roleId);
  } else {
    return answerPrivately(interaction, '`action` must be add, remove or clear.');
  }
  const updated = await services.settings.update(guildId, interaction.user.id, description, (settings) => ({
    ...settings,
    roles: { ...settings.roles, [feature]: next(settings.roles[feature]) },
  }));
  await saved(interaction, updated, services, guildId);
}

async function saved(interaction: ChatInputCommandInteraction, settings: GuildSettings, services: Services, guildId: string, note = 'Saved.') {
  await answerPrivately(interaction, `${note}\n${await describe(settings, services, guildId)}`);
}

/** A model the server's key cannot use is refused now rather than on every /video; an unreachable gateway does not block the change. */
async function checkModel(services: Services, guildId: string, model: string): Promise<string | undefined> {
  const available = await services.models.videoModels(guildId).catch((error: unknown) => {
    services.log.warn('could not list the models to check a default model; accepting it unchecked', { guild: guildId, error });
    return undefined;
  });
  if (!available || available.length === 0 || available.includes(model)) return undefined;
  return `\`model\`: ${model} is not available to this server's key. Available: ${available.join(', ')}.`;
}

async function defaults(interaction: ChatInputCommandInteraction, services: Services, guildId: string) {
  const options = interaction.options;
  const model = options.getString('model') ?? undefined;
  const resolution = options.getString('resolution') ?? undefined;
  const duration = options.getInteger('duration') ?? undefined;
  const aspectRatio = options.getString('aspect_ratio') ?? undefined;
  const buttonsGiven = options.getString('buttons') ?? undefined;
  const reset = options.getBoolean('reset') === true;
  if (reset) {
    const updated = await services.settings.update(guildId, interaction.user.id, 'reset the video defaults', (settings) => ({ ...settings, defaults: {} }));
    return saved(interaction, updated, services, guildId);
  }
  if (model === undefined && resolution === undefined && duration === undefined && aspectRatio === undefined && buttonsGiven === undefined) {
    return answerPrivately(interaction, 'Give at least one of `model`, `resolution`, `duration`, `aspect_ratio`, `buttons`, or `reset`.');
  }
  const buttons = RESULT_BUTTONS.find((value) => value === buttonsGiven);
  if (buttonsGiven !== undefined && buttons === undefined) return answerPrivately(interaction, `\`buttons\` must be one of ${RESULT_BUTTONS.join(', ')}.`);
  if (resolution !== undefined && !RESOLUTIONS.some((value) => value === resolution)) return answerPrivately(interaction, `\`resolution\` must be one of ${RESOLUTIONS.join(', ')}.`);
  if (aspectRatio !== undefined && !ASPECT_RATIOS.some((value) => value === aspectRatio)) return answerPrivately(interaction, `\`aspect_ratio\` must be one of ${ASPECT_RATIOS.join(', ')}.`);
  if (duration !== undefined && (duration < GENERATION_DURATION.min || duration > GENERATION_DURATION.max)) {
    return answerPrivately(interaction, `\`duration\` must be ${GENERATION_DURATION.min} to ${GENERATION_DURATION.max} seconds.`);
  }
  if (model !== undefined) {
    const problem = await checkModel(services, guildId, model);
    if (problem) return answerPrivately(interaction, problem);
  }
  const change = {
    ...(model === undefined ? {} : { model }),
    ...(resolution === undefined ? {} : { resolution }),
    ...(duration === undefined ? {} : { duration }),
    ...(aspectRatio === undefined ? {} : { aspectRatio }),
    ...(buttons === undefined ? {} : { buttons }),
  };
  const description = `set video defaults: ${[model, resolution, duration === undefined ? undefined : `${duration} s`, aspectRatio, buttons === undefined ? undefined : `buttons ${buttons}`].filter((part) => part !== undefined).join(', ')}`;
  const updated = await services.settings.update(guildId, interaction.user.id, description, (settings) => ({ ...settings, defaults: { ...settings.defaults, ...change } }));
  await saved(interaction, updated, services, guildId);
}

async function limits(interaction: ChatInputCommandInteraction, services: Services, guildId: string) {
  const given = {
    concurrentPerUser: interaction.options.getInteger('concurrent_per_user'),
    dailyPerUser: interaction.options.getInteger('daily_per_user'),
    dailyPerServer: interaction.options.getInteger('daily_per_server'),
  };
  if (Object.values(given).every((value) => value === null)) return answerPrivately(interaction, 'Give at least one of `concurrent_per_user`, `daily_per_user`, `daily_per_server`.');
  for (const [option, value] of [['concurrent_per_user', given.concurrentPerUser], ['daily_per_user', given.dailyPerUser], ['daily_per_server', given.dailyPerServer]] as const) {
    if (value !== null && (value < 0 || value > MAX_LIMIT)) return answerPrivately(interaction, `\`${option}\` must be 0 (no limit) to ${MAX_LIMIT}.`);
  }
  const limit = (value: number) => (value === 0 ? 'no limit' : String(value));
  const parts = [
    given.concurrentPerUser === null ? undefined : `${limit(given.concurrentPerUser)} in progress per member`,
    given.dailyPerUser === null ? undefined : `${limit(given.dailyPerUser)} a day per member`,
    given.dailyPerServer === null ? undefined : `${limit(given.dailyPerServer)} a day for the server`,
  ];
  const updated = await services.settings.update(guildId, interaction.user.id, `set limits: ${parts.filter((part) => part !== undefined).join(', ')}`, (settings) => ({
    ...settings,
    limits: {
      concurrentPerUser: given.concurrentPerUser ?? settings.limits.concurrentPerUser,
      dailyPerUser: given.dailyPerUser ?? settings.limits.dailyPerUser,
      dailyPerServer: given.dailyPerServer ?? settings.limits.dailyPerServer,
    },
  }));
  await saved(interaction, updated, services, guildId);
}

async function execute(interaction: ChatInputCommandInteraction, services: Services) {
  const guildId = guildOf(interaction);
  const options = interaction.options;
  const by = interaction.user.id;
  switch (options.getSubcommand()) {
    case 'key':
      return key(interaction, services);
    case 'key-clear': {
      const cleared = await services.settings.clearKey(guildId, by);
      return answerPrivately(interaction, cleared ? "The server's gateway key was removed." : 'This server has no key of its own to remove.');
    }
    case 'show':
      return answerPrivately(interaction, await describe(await services.settings.get(guildId), services, guildId));
    case 'layer': {
      const layer = LAYERS.find((candidate) => candidate === options.getString('layer', true));
      if (!layer) return answerPrivately(interaction, '`layer` must be compat or native.');
      const updated = await services.settings.update(guildId, by, `set the layer to ${layer}`, (settings) => ({ ...settings, layer }));
      return saved(interaction, updated, services, guildId, `Saved: new tasks use the ${layer} layer (tasks already running stay on theirs).`);
    }
    case 'defaults':
      return defaults(interaction, services, guildId);
    case 'storage': {
      const keepDays = options.getInteger('keep_days', true);
      if (keepDays < 0 || keepDays > STORAGE_MAX_DAYS) return answerPrivately(interaction, `\`keep_days\` must be 0 (not kept) to ${STORAGE_MAX_DAYS}.`);
      const publicLink = options.getBoolean('public_link') ?? false;
      const updated = await services.settings.update(guildId, by, `set storage to ${keepDays} days${publicLink ? ' with a public link' : ''}`, (settings) => ({ ...settings, storage: { keepDays, publicLink } }));
      return saved(interaction, updated, services, guildId);
    }
    case 'roles':
      return roles(interaction, services, guildId);
    case 'limits':
      return limits(interaction, services, guildId);
    default:
      throw new Error(`unknown /config subcommand ${options.getSubcommand()}`);
  }
}

async function autocomplete(interaction: AutocompleteInteraction, services: Services) {
  const models = interaction.guildId ? await services.models.suggested(interaction.guildId, 'video') : [];
  await suggest(interaction, containing(models, interaction.options.getFocused()));
}

/** `/config key` opens a form; everything else answers the admin privately. */
function answers(interaction: HandledInteraction): Placeholder | 'form' {
  return interaction.isChatInputCommand() && interaction.options.getSubcommand() === 'key' ? 'form' : 'private';
}

export default { data, requires, answers, execute, autocomplete, modal } satisfies Command;
