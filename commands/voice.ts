import {
  ChannelType,
  InteractionContextType,
  SlashCommandBuilder,
  type AutocompleteInteraction,
  type ChatInputCommandInteraction,
} from 'discord.js';
import { answerPrivately } from '../src/discord/answer.ts';
import type { Command } from '../src/interactions/command.ts';
import { guildOf, type HandledInteraction, type Requirement } from '../src/interactions/requirements.ts';
import { containing, suggest } from '../src/discord/autocomplete.ts';
import { BUILT_IN_VOICES } from '../src/gateway/spec.ts';
import type { Services } from '../src/services.ts';
import { describeCallEncryption } from '../src/voice/call-encryption.ts';
import type { VoiceSettings } from '../src/ports/voice-settings.ts';
import { checkVoiceSettingsChange, parseWakeWords, RESPOND_MODES, TURN_DETECTION_MODES, VOICE_LIMITS, type VoiceSettingsChange } from '../src/settings/voice-settings.ts';

/** Instructions may be 2000 characters, as long as a whole Discord message: the reply shows their start. */
const INSTRUCTIONS_PREVIEW = 500;

const data = new SlashCommandBuilder()
  .setName('voice')
  .setDescription('Talk with the realtime voice model in a voice channel')
  .setContexts(InteractionContextType.Guild)
  .addSubcommand((sub) =>
    sub
      .setName('join')
      .setDescription('Join a voice channel and start listening')
      .addChannelOption((option) => option.setName('channel').setDescription('Default: the voice channel you are in').addChannelTypes(ChannelType.GuildVoice, ChannelType.GuildStageVoice)),
  )
  .addSubcommand((sub) => sub.setName('leave').setDescription('Stop listening and leave the voice channel'))
  .addSubcommand((sub) =>
    sub
      .setName('settings')
      .setDescription('Show or change how voice conversations work on this server (Manage Server to change)')
      .addStringOption((option) => option.setName('voice').setDescription('The model\'s voice').setAutocomplete(true))
      .addStringOption((option) => option.setName('instructions').setDescription('What the model should be like').setMaxLength(VOICE_LIMITS.instructionsLength))
      .addStringOption((option) => option.setName('model').setDescription('Realtime model').setAutocomplete(true))
      .addStringOption((option) =>
        option
          .setName('turn_detection')
          .setDescription('Who decides that someone finished speaking')
          .addChoices({ name: 'server: the gateway listens for pauses', value: 'server' }, { name: 'discord: when Discord says speaking stopped', value: 'discord' }),
      )
      .addNumberOption((option) => option.setName('vad_threshold').setDescription('How loud counts as speech (server mode)').setMinValue(VOICE_LIMITS.vadThreshold.min).setMaxValue(VOICE_LIMITS.vadThreshold.max))
      .addIntegerOption((option) => option.setName('silence_ms').setDescription('Pause that ends a turn (server mode)').setMinValue(VOICE_LIMITS.silenceMs.min).setMaxValue(VOICE_LIMITS.silenceMs.max))
      .addBooleanOption((option) => option.setName('transcripts').setDescription('Post what is said in a thread'))
      .addIntegerOption((option) => option.setName('idle_minutes').setDescription('Leave after this long without speech').setMinValue(VOICE_LIMITS.idleMinutes.min).setMaxValue(VOICE_LIMITS.idleMinutes.max))
      .addStringOption((option) =>
        option
          .setName('respond')
          .setDescription('Which turns the bot answers')
          .addChoices(
            { name: 'auto: every turn with one person, only when named with more', value: 'auto' },
            { name: 'always: every turn', value: 'always' },
            { name: 'when_named: only turns that name the bot', value: 'when_named' },
          ),
      )
      .addStringOption((option) => option.setName('wake_words').setDescription('Names it answers to, comma-separated (empty: its display name)').setMaxLength(400))
      .addBooleanOption((option) => option.setName('tools').setDescription('Let the model make videos and check them for whoever asks (same rules as /video)')),
  );

/** Joining follows the server's role rules for /voice; anyone may look at the settings, admins change them. */
function requires(interaction: HandledInteraction): Requirement {
  if (!interaction.isChatInputCommand()) return { inServer: true };
  const subcommand = interaction.options.getSubcommand();
  if (subcommand === 'join') return { feature: 'voice' };
  const changes = interaction.options.data.find((option) => option.name === subcommand)?.options ?? [];
  if (subcommand === 'settings' && changes.length > 0) return { manageServer: true, what: 'Changing voice settings' };
  return { inServer: true };
}

async function join(interaction: ChatInputCommandInteraction, services: Services) {
  // The bot has every server it is in cached (the Guilds intent), and the dispatcher let this through only in one.
  if (!interaction.inCachedGuild()) throw new Error('/voice join reached its handler outside a cached server');
  const chosen = interaction.options.getChannel('channel');
  const channelId = chosen?.id ?? interaction.member.voice.channelId;
  if (!channelId) return answerPrivately(interaction, 'Join a voice channel first, or name one with the `channel` option.');
  const result = await services.voice.join(interaction.guildId, channelId, interaction.channelId);
  if (!result.ok) return answerPrivately(interaction, result.message);
  await answerPrivately(interaction, result.alreadyThere ? `I am already listening in <#${channelId}>.` : `Joined <#${channelId}>. ${describeCallEncryption(result.encryption)}`);
}

async function leave(interaction: ChatInputCommandInteraction, services: Services) {
  const left = await services.voice.leave(guildOf(interaction), `asked by <@${interaction.user.id}>`);
  await answerPrivately(interaction, left ? 'Left the voice channel.' : 'I am not in a voice channel on this server.');
}

function describeRespond(settings: VoiceSettings): string {
  const names = settings.wakeWords.length > 0 ? settings.wakeWords.map((word) => `"${word}"`).join(', ') : 'its display name';
  const when =
    settings.respond === 'always'
      ? 'every turn'
      : settings.respond === 'when_named'
        ? 'only turns that name it'
        : 'every turn with one person in the channel, only turns that name it with more';
  return `${settings.respond}: ${when} (its names: ${names})`;
}

function describeSettings(settings: VoiceSettings): string {
  return [
    `**Voice:** ${settings.voice}`,
    `**Model:** ${settings.model}`,
    `**Turn detection:** ${settings.turnDetection}${settings.turnDetection === 'server' ? ` (threshold ${settings.vadThreshold}, ${settings.silenceMs} ms of silence ends a turn)` : ''}`,
    `**Transcripts:** ${settings.transcripts ? 'on, in a thread' : 'off'}`,
    `**Leaves after:** ${settings.idleMinutes} min without speech`,
    `**Answers:** ${describeRespond(settings)}`,
    `**Tools:** ${settings.tools === false ? 'off' : 'on (generate_video, video_status, with the rules of /video)'}`,
    `**Instructions:** ${settings.instructions.length > INSTRUCTIONS_PREVIEW ? `${settings.instructions.slice(0, INSTRUCTIONS_PREVIEW - 1)}… (${settings.instructions.length} characters)` : settings.instructions}`,
    settings.updatedBy ? `Last changed by <@${settings.updatedBy}> <t:${Math.floor((settings.updatedAt ?? 0) / 1000)}:R>.` : '',
  ]
    .filter((line) => line !== '')
    .join('\n');
}

async function settings(interaction: ChatInputCommandInteraction, services: Services) {
  const guildId = guildOf(interaction);
  const options = interaction.options;
  const change: VoiceSettingsChange = {};
  const voice = options.getString('voice');
  if (voice !== null) change.voice = voice;
  const instructions = options.getString('instructions');
  if (instructions !== null) change.instructions = instructions;
  const model = options.getString('model');
  if (model !== null) change.model = model;
  const turn = options.getString('turn_detection');
  const mode = TURN_DETECTION_MODES.find((candidate) => candidate === turn);
  if (mode) change.turnDetection = mode;
  const threshold = options.getNumber('vad_threshold');
  if (threshold !== null) change.vadThreshold = threshold;
  const silence = options.getInteger('silence_ms');
  if (silence !== null) change.silenceMs = silence;
  const transcripts = options.getBoolean('transcripts');
  if (transcripts !== null) change.transcripts = transcripts;
  const idle = options.getInteger('idle_minutes');
  if (idle !== null) change.idleMinutes = idle;
  const respond = options.getString('respond');
  if (respond !== null) {
    const chosen = RESPOND_MODES.find((candidate) => candidate === respond);
    if (!chosen) return answerPrivately(interaction, `\`respond\` must be one of ${RESPOND_MODES.join(', ')}; got "${respond}".`);
    change.respond = chosen;
  }
  const wakeWords = options.getString('wake_words');
  if (wakeWords !== null) change.wakeWords = parseWakeWords(wakeWords);
  const tools = options.getBoolean('tools');
  if (tools !== null) change.tools = tools;

  if (Object.keys(change).length === 0) {
    return answerPrivately(interaction, describeSettings(await services.settings.voiceSettings(guildId)));
  }
  const problem = checkVoiceSettingsChange(change, services.config.gatewayVendor);
  if (problem) return answerPrivately(interaction, problem);
  // Recorded in the server's change history (/config show) with who and when, in the same step.
  const updated = await services.settings.changeVoiceSettings(guildId, change, interaction.user.id);
  const note = services.voice.isIn(guildId) ? '\nThe new settings apply from the next `/voice join`.' : '';
  await answerPrivately(interaction, `Saved.\n${describeSettings(updated)}${note}`);
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
    case 'settings':
      return settings(interaction, services);
    default:
      throw new Error(`unknown /voice subcommand ${interaction.options.getSubcommand()}`);
  }
}

export default { data, requires, execute, autocomplete } satisfies Command;
