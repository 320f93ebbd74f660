import { randomBytes } from 'node:crypto';
import { isRecord } from '../lib/json.ts';
import { COMPONENT } from '../rest/components.ts';
import { CALLBACK, type InteractionRecord } from '../rest/interactions.ts';
import type { VoiceUserOptions } from '../voice/contract.ts';
import { snowflake } from '../world/snowflake.ts';
import { commandReach } from '../rest/commands.ts';
import {
  USER_INSTALL_APP_PERMISSIONS,
  DEFAULT_ATTACHMENT_LIMIT,
  attachmentObject,
  channelObject,
  memberObject,
  memberPermissions,
  roleObject,
  userObject,
  type Channel,
  type Guild,
  type Message,
  type PrivateChannel,
  type User,
} from '../world/state.ts';
import type { StandInFaults } from './faults.ts';
import { InteractionHandle, type AutocompleteChoice } from './interaction-handle.ts';
import type { StandInObservation } from './observation.ts';
import { guildOf, type StandInParts } from './parts.ts';

// What simulated users do: run commands (slash commands and the Apps menu on a message), click buttons,
// submit modals, type into autocomplete, post messages, and join and leave voice channels. Each arrives
// at the bot as Discord sends it.

export interface AttachmentValue {
  filename: string;
  bytes: Buffer;
  contentType: string;
}

export type OptionValue = string | number | boolean | AttachmentValue | User;

export interface CommandRun {
  user: User;
  /**
   * The server of `channelId` (optional: the channel says it). A DM has none: the bot's DM with the user
   * (`botDmChannel(user)`, context 1) or a DM or group DM between users (`createPrivateChannel()`, context 2).
   */
  guildId?: string;
  channelId: string;
  command: string;
  group?: string;
  subcommand?: string;
  options?: Record<string, OptionValue | undefined>;
}

/** A slash command's run with the option being typed into (`focused`, a name in `options`). */
export type AutocompleteRun = CommandRun & { focused: string };

export interface MessageCommandOptions {
  user: User;
  /** The message whose Apps menu the command is picked from. */
  message: Message;
  command: string;
}

export interface ButtonClickOptions {
  user: User;
  /** The message that carries the button. */
  message: Message;
  customId: string;
}

export interface ModalSubmitOptions {
  user: User;
  /** As in a command run: optional, and none in a DM. */
  guildId?: string;
  channelId: string;
  customId: string;
  /** Each text input's custom id and the value typed into it. */
  fields?: Record<string, string>;
  /** Each file upload's custom id and the files the member uploaded into it (a label wrapping a file upload). */
  files?: Record<string, AttachmentValue[]>;
  /** Each select's custom id and the values the member picked in it (a label wrapping a select). */
  selects?: Record<string, string[]>;
}

export interface PostMessageOptions {
  user: User;
  channelId: string;
  content?: string;
  attachments?: AttachmentValue[];
  embeds?: Record<string, unknown>[];
}

const OPTION = {
  subcommand: 1,
  group: 2,
  string: 3,
  integer: 4,
  boolean: 5,
  user: 6,
  channel: 7,
  role: 8,
  mentionable: 9,
  number: 10,
  attachment: 11,
} as const;
const INTERACTION = { command: 2, component: 3, autocomplete: 4, modal: 5 } as const;
/** Application command types: a slash command, and the Apps menu on a message. */
const COMMAND_TYPE = { chatInput: 1, message: 3 } as const;
/** Who installed the app that an interaction reaches: the keys of `authorizing_integration_owners`. */
const INTEGRATION_TYPE = { guildInstall: '0', userInstall: '1' } as const;
/** Where an interaction happened: a server, the bot's DM, a private channel. */
const INTERACTION_CONTEXT = { guild: 0, botDm: 1, privateChannel: 2 } as const;

/** Where an interaction happens: a server's channel (context 0), or a DM (the bot's, 1; between users, 2). */
type Place =
  | { context: typeof INTERACTION_CONTEXT.guild; guild: Guild; channel: Channel }
  | { context: typeof INTERACTION_CONTEXT.botDm | typeof INTERACTION_CONTEXT.privateChannel; dm: PrivateChannel };

function isAttachment(value: unknown): value is AttachmentValue {
  return isRecord(value) && Buffer.isBuffer(value.bytes) && typeof value.filename === 'string';
}

function isUser(value: unknown): value is User {
  return isRecord(value) && typeof value.id === 'string' && typeof value.username === 'string';
}

export class StandInActions {
  readonly #parts: StandInParts;
  readonly #observation: StandInObservation;
  readonly #faults: StandInFaults;

  constructor(parts: StandInParts, observation: StandInObservation, faults: StandInFaults) {
    this.#parts = parts;
    this.#observation = observation;
    this.#faults = faults;
  }

  /** The user joins a voice channel; `{ dave: false }`: their client has no DAVE, and the call downgrades. */
  joinVoice(user: User, guildId: string, channelId: string, options?: VoiceUserOptions): void {
    this.#parts.gateway.userVoiceState(guildOf(this.#parts, guildId), user.id, channelId, options);
  }

  leaveVoice(user: User, guildId: string): void {
    this.#parts.gateway.userVoiceState(guildOf(this.#parts, guildId), user.id, null);
  }

  /** The command a member picks where they are: the server's own commands first (none in a DM), then global ones. */
  #definition(place: Place, command: string): Record<string, unknown> {
    const { commands } = this.#parts.state;
    const scoped = place.context === INTERACTION_CONTEXT.guild ? (commands.get(place.guild.id) ?? []) : [];
    const definition = [...scoped, ...(commands.get('global') ?? [])].find((candidate) => candidate.name === command);
    if (!definition) throw new Error(`the bot registered no /${command}`);
    return definition;
  }

  /** Where `channelId` is for `user`; throws where the user could not be (not a member, not a recipient). */
  #place(user: User, channelId: string, guildId?: string): Place {
    const { state } = this.#parts;
    const found = state.channel(channelId);
    if (found) {
      if (guildId !== undefined && found.guild.id !== guildId) throw new Error(`no channel ${channelId} in guild ${guildId}`);
      if (!found.guild.members.has(user.id)) throw new Error(`${user.username} is not a member of guild ${found.guild.id}`);
      return { context: INTERACTION_CONTEXT.guild, guild: found.guild, channel: found.channel };
    }
    const dm = state.privateChannels.get(channelId);
    if (!dm) throw new Error(guildId === undefined ? `no channel ${channelId}` : `no channel ${channelId} in guild ${guildId}`);
    if (guildId !== undefined) throw new Error(`channel ${channelId} is a DM, in no guild`);
    if (!dm.recipientIds.includes(user.id)) throw new Error(`${user.username} is not in the DM ${channelId}`);
    if (!dm.recipientIds.includes(state.botUser.id)) return { context: INTERACTION_CONTEXT.privateChannel, dm };
    if (!state.sharesGuildWithBot(user.id) && !state.userInstalls.has(user.id))
      throw new Error(`${user.username} shares no server with the bot and has not installed the app: they cannot reach its DM`);
    return { context: INTERACTION_CONTEXT.botDm, dm };
  }

  /**
   * `authorizing_integration_owners` as Discord fills it (README.md, "User installs"): "0" when the app is
   * installed to the server there (the server's id; "0" in the bot's DM), "1" when the user installed it
   * (their id), each only where the command (`reach`; any interaction of the app without one) may be used
   * through that install.
   */
  #owners(place: Place, user: User, reach?: { integrationTypes: number[]; contexts: number[] }): Record<string, string> {
    const { state } = this.#parts;
    const owners: Record<string, string> = {};
    if (reach && !reach.contexts.includes(place.context)) return owners;
    const types = reach?.integrationTypes ?? [0, 1];
    if (types.includes(0)) {
      if (place.context === INTERACTION_CONTEXT.guild && state.botInGuild(place.guild))
        owners[INTEGRATION_TYPE.guildInstall] = place.guild.id;
      if (place.context === INTERACTION_CONTEXT.botDm) owners[INTEGRATION_TYPE.guildInstall] = '0';
    }
    if (types.includes(1) && state.userInstalls.has(user.id)) owners[INTEGRATION_TYPE.userInstall] = user.id;
    return owners;
  }

  /** The owners through which `user` may run `definition` at `place`; throws where Discord would not offer it. */
  #commandOwners(place: Place, user: User, definition: Record<string, unknown>, command: string): Record<string, string> {
    const reach = commandReach(definition);
    const owners = this.#owners(place, user, reach);
    if (Object.keys(owners).length === 0) {
      const where = ['a server', "the bot's DM", 'a DM between users'][place.context];
      throw new Error(
        `Discord offers ${user.username} no /${command} in ${where}: integration_types ${JSON.stringify(reach.integrationTypes)}, ` +
          `contexts ${JSON.stringify(reach.contexts)}, app ${place.context === INTERACTION_CONTEXT.guild && this.#parts.state.botInGuild(place.guild) ? 'installed to the server' : 'not installed to a server here'}, ` +
          `${this.#parts.state.userInstalls.has(user.id) ? 'installed' : 'not installed'} by the user`,
      );
    }
    return owners;
  }

  #base(
    type: number,
    user: User,
    place: Place,
    owners: Record<string, string>,
  ): { record: InteractionRecord; payload: Record<string, unknown> } {
    const { state } = this.#parts;
    const id = snowflake(Date.now() + this.#faults.interactionIdClockSkewMs);
    const token = `aW50ZXJhY3Rpb24${randomBytes(48).toString('base64url')}`;
    const common = {
      id,
      application_id: state.applicationId,
      type,
      token,
      version: 1,
    };
    let payload: Record<string, unknown>;
    let channelId: string;
    if (place.context === INTERACTION_CONTEXT.guild) {
      const { guild, channel } = place;
      channelId = channel.id;
      const member = guild.members.get(user.id);
      if (!member) throw new Error(`${user.username} is not a member of guild ${guild.id}`);
      const permissions = memberPermissions(guild, member);
      payload = {
        ...common,
        guild_id: guild.id,
        guild: { id: guild.id, locale: guild.preferredLocale, features: [] },
        channel_id: channel.id,
        channel: { ...channelObject(channel), permissions: permissions.toString() },
        member: memberObject(member, user, permissions),
        // The bot's own permissions where it is in the server; what a user install may do where it is not.
        app_permissions: (state.botInGuild(guild)
          ? ((1n << 50n) - 1n) & ~state.deniedBotBits(channel.id)
          : USER_INSTALL_APP_PERMISSIONS.guildWithoutBot
        ).toString(),
        // The member's language and the server's, as each picked it in Discord.
        locale: user.locale,
        guild_locale: guild.preferredLocale,
        entitlements: [],
        authorizing_integration_owners: owners,
        context: place.context,
        attachment_size_limit: guild.attachmentSizeLimit,
      };
    } else {
      const { dm } = place;
      channelId = dm.id;
      const botDm = place.context === INTERACTION_CONTEXT.botDm;
      payload = {
        ...common,
        channel_id: dm.id,
        // The bot's DM as the bot sees it (the user its recipient); a DM between users as the user sees it.
        channel: state.privateChannelObject(dm, botDm ? state.botUser.id : user.id),
        // In a DM: the user instead of a member, and no server language.
        user: userObject(user),
        app_permissions: (botDm ? USER_INSTALL_APP_PERMISSIONS.botDm : USER_INSTALL_APP_PERMISSIONS.privateChannel).toString(),
        locale: user.locale,
        entitlements: [],
        authorizing_integration_owners: owners,
        context: place.context,
        attachment_size_limit: DEFAULT_ATTACHMENT_LIMIT,
      };
    }
    const record: InteractionRecord = {
      id,
      token,
      type,
      name: '',
      createdAt: Date.now(),
      guildId: place.context === INTERACTION_CONTEXT.guild ? place.guild.id : undefined,
      channelId,
      context: place.context,
      owners,
      userId: user.id,
      payload,
      callbacks: [],
      original: undefined,
      followUps: [],
      sourceMessage: undefined,
      tokenExpired: false,
    };
    return { record, payload };
  }

  /** A slash command's interaction: where, through which installs, and its `data`. */
  #commandInteraction(type: number, run: CommandRun, focused?: string): { record: InteractionRecord; payload: Record<string, unknown> } {
    const place = this.#place(run.user, run.channelId, run.guildId);
    const definition = this.#definition(place, run.command);
    if (definition.type !== COMMAND_TYPE.chatInput) throw new Error(`${run.command} is not a slash command`);
    const owners = this.#commandOwners(place, run.user, definition, run.command);
    const { record, payload } = this.#base(type, run.user, place, owners);
    record.name = run.command;
    payload.data = this.#commandData(run, place, definition, focused);
    return { record, payload };
  }

  #commandData(run: CommandRun, place: Place, definition: Record<string, unknown>, focused?: string): Record<string, unknown> {
    const guild = place.context === INTERACTION_CONTEXT.guild ? place.guild : undefined;
    const resolved: Record<string, Record<string, unknown>> = {};
    let level: unknown[] = Array.isArray(definition.options) ? definition.options : [];
    const path: { name: string; type: number }[] = [];
    for (const [name, type] of [
      [run.group, OPTION.group],
      [run.subcommand, OPTION.subcommand],
    ] as const) {
      if (!name) continue;
      const option = level.find((candidate) => isRecord(candidate) && candidate.name === name);
      if (!isRecord(option)) throw new Error(`/${run.command} has no ${name}`);
      path.push({ name, type });
      level = Array.isArray(option.options) ? option.options : [];
    }
    const values = Object.entries(run.options ?? {}).flatMap(([name, value]) => {
      if (value === undefined) return [];
      const option = level.find((candidate) => isRecord(candidate) && candidate.name === name);
      if (!isRecord(option) || typeof option.type !== 'number')
        throw new Error(`/${run.command} ${path.map((part) => part.name).join(' ')} has no option ${name}`);
      return [
        {
          name,
          type: option.type,
          value: this.#optionValue(option.type, value, run.channelId, guild, resolved),
          ...(focused === name ? { focused: true } : {}),
        },
      ];
    });
    let options: unknown[] = values;
    for (const part of [...path].reverse()) options = [{ name: part.name, type: part.type, options }];
    // `data.guild_id` is the server a command is registered to: a server's own commands only.
    return {
      id: definition.id,
      name: run.command,
      type: 1,
      options,
      resolved,
      ...(typeof definition.guild_id === 'string' ? { guild_id: definition.guild_id } : {}),
    };
  }

  #optionValue(
    type: number,
    value: OptionValue,
    channelId: string,
    guild: Guild | undefined,
    resolved: Record<string, Record<string, unknown>>,
  ): unknown {
    const id = typeof value === 'string' ? value : isUser(value) ? value.id : '';
    if (type === OPTION.attachment) {
      if (!isAttachment(value)) throw new Error('an attachment option takes { filename, bytes, contentType }');
      const stored = this.#parts.state.storeAttachment(channelId, value.filename, value.contentType, value.bytes);
      (resolved.attachments ??= {})[stored.id] = attachmentObject(stored);
      return stored.id;
    }
    // A mentionable is a user or a role; Discord resolves it as whichever it is.
    const mentionsUser = type === OPTION.mentionable && (isUser(value) || this.#parts.state.users.has(id));
    if (type === OPTION.user || mentionsUser) {
      const user = isUser(value) ? value : this.#parts.state.users.get(id);
      if (!user) throw new Error(`no user ${id}`);
      (resolved.users ??= {})[user.id] = userObject(user);
      const member = guild?.members.get(user.id);
      if (member)
        (resolved.members ??= {})[user.id] = {
          roles: member.roleIds,
          joined_at: member.joinedAt,
          nick: null,
          avatar: null,
          flags: 0,
          pending: false,
          premium_since: null,
          communication_disabled_until: null,
        };
      return user.id;
    }
    if (type === OPTION.channel) {
      const channel = guild?.channels.find((candidate) => candidate.id === id);
      if (!channel) throw new Error(`no channel ${id}`);
      (resolved.channels ??= {})[channel.id] = { ...channelObject(channel), permissions: ((1n << 50n) - 1n).toString() };
      return channel.id;
    }
    if (type === OPTION.role || type === OPTION.mentionable) {
      const role = guild?.roles.find((candidate) => candidate.id === id);
      if (!role) throw new Error(type === OPTION.role ? `no role ${id}` : `no user or role ${id}`);
      (resolved.roles ??= {})[role.id] = roleObject(role);
      return role.id;
    }
    if (isAttachment(value) || isUser(value)) throw new Error(`option type ${type} takes a plain value`);
    return value;
  }

  #start(record: InteractionRecord, payload: Record<string, unknown>): InteractionHandle {
    this.#parts.interactions.register(record);
    this.#observation.interactions.push(record);
    this.#parts.gateway.dispatch('INTERACTION_CREATE', payload);
    return new InteractionHandle(record, this.#observation);
  }

  /**
   * A user runs a slash command in a server's channel or a DM. It must be one Discord offers there
   * (README.md, "User installs"): through the server's install or the user's own, by its
   * `integration_types` and `contexts`; otherwise this throws, as Discord would not show it.
   */
  runCommand(run: CommandRun): InteractionHandle {
    const { record, payload } = this.#commandInteraction(INTERACTION.command, run);
    return this.#start(record, payload);
  }

  /**
   * A member picks a message command from the Apps menu of `message`: type 2 with `data.type` 3,
   * `target_id` the message, and the message itself in `resolved.messages`, as Discord sends it (content,
   * attachments and embeds included, whatever the bot's intents).
   */
  runMessageCommand(options: MessageCommandOptions): InteractionHandle {
    const place = this.#place(options.user, options.message.channelId);
    const definition = this.#definition(place, options.command);
    if (definition.type !== COMMAND_TYPE.message) throw new Error(`${options.command} is not a message command`);
    const owners = this.#commandOwners(place, options.user, definition, options.command);
    const { record, payload } = this.#base(INTERACTION.command, options.user, place, owners);
    record.name = options.command;
    payload.data = {
      id: definition.id,
      name: options.command,
      type: COMMAND_TYPE.message,
      target_id: options.message.id,
      resolved: { messages: { [options.message.id]: this.#parts.state.messageObject(options.message) } },
      ...(typeof definition.guild_id === 'string' ? { guild_id: definition.guild_id } : {}),
    };
    return this.#start(record, payload);
  }

  /**
   * A member posts a message in a channel: text, files (stored and served as Discord's CDN serves
   * attachments) and embeds (as Discord makes them for a link, say). It is dispatched as MESSAGE_CREATE.
   */
  postMessage(options: PostMessageOptions): Message {
    // A server's channel the user is a member of, or a DM they are in (the bot sees only its own).
    this.#place(options.user, options.channelId);
    const attachments = options.attachments ?? [];
    return this.#parts.messages.create({
      channelId: options.channelId,
      authorId: options.user.id,
      body: {
        json: {
          content: options.content ?? '',
          embeds: options.embeds ?? [],
          attachments: attachments.map((file, index) => ({ id: String(index), filename: file.filename })),
        },
        files: attachments.map((file, index) => ({ part: index, name: file.filename, contentType: file.contentType, bytes: file.bytes })),
      },
    });
  }

  /** A user typing in an option with autocomplete: resolves with the choices the bot offered. */
  autocomplete(run: AutocompleteRun): Promise<AutocompleteChoice[]> {
    const { record, payload } = this.#commandInteraction(INTERACTION.autocomplete, run, run.focused);
    return this.#start(record, payload).choices();
  }

  clickButton(options: ButtonClickOptions): InteractionHandle {
    const place = this.#place(options.user, options.message.channelId);
    // A component answers through the installs of the interaction that made its message.
    const owners = options.message.interaction?.owners ?? this.#appOwners(place, options.user);
    const { record, payload } = this.#base(INTERACTION.component, options.user, place, { ...owners });
    record.name = options.customId;
    record.sourceMessage = options.message;
    payload.data = { custom_id: options.customId, component_type: 2 };
    payload.message = this.#parts.state.messageObject(options.message);
    return this.#start(record, payload);
  }

  /**
   * A member submits a form. Its MODAL_SUBMIT carries each field as Discord sends it: a text input in
   * the action row or the label it was shown in, a file upload and a select in a label with their
   * `values` (a file upload's are attachment ids, resolved in `data.resolved.attachments` and served at
   * their url). When the form was shown (the last modal with this custom id), files and selects are
   * held to it as a member's client holds them: a field it lacks, a count outside min/max, a required
   * one left out, an option it does not offer, a file over the upload limit are refused with an Error.
   */
  submitModal(options: ModalSubmitOptions): InteractionHandle {
    const place = this.#place(options.user, options.channelId, options.guildId);
    const uploadLimit = place.context === INTERACTION_CONTEXT.guild ? place.guild.attachmentSizeLimit : DEFAULT_ATTACHMENT_LIMIT;
    const shown = formInputs(this.#shownForm(options.customId));
    const components: { order: number; component: Record<string, unknown> }[] = [];
    const attachments: Record<string, Record<string, unknown>> = {};
    let nextId = 1;
    const add = (customId: string, inner: Record<string, unknown>, inLabel: boolean) => {
      const order = shown?.get(customId)?.order ?? Number.MAX_SAFE_INTEGER;
      const id = nextId;
      nextId += 2;
      const component = inLabel
        ? { type: COMPONENT.label, id, component: { ...inner, id: id + 1, custom_id: customId } }
        : { type: COMPONENT.actionRow, id, components: [{ ...inner, id: id + 1, custom_id: customId }] };
      components.push({ order, component });
    };
    for (const [customId, value] of Object.entries(options.fields ?? {})) {
      // A text input comes back where the form showed it: in a label, or in its action row.
      add(customId, { type: COMPONENT.textInput, value }, shown?.get(customId)?.inLabel ?? false);
    }
    for (const [customId, files] of Object.entries(options.files ?? {})) {
      const input = shownInput(shown, customId, [COMPONENT.fileUpload], 'file upload');
      if (input) checkCount(input, customId, files.length, 'file');
      const ids = files.map((file) => {
        if (file.bytes.length > uploadLimit)
          throw new Error(
            `${file.filename} is over the ${place.context === INTERACTION_CONTEXT.guild ? "server's" : 'DM'} upload limit of ${uploadLimit} bytes`,
          );
        const stored = this.#parts.state.storeAttachment(options.channelId, file.filename, file.contentType, file.bytes, {
          ephemeral: true,
        });
        // A file uploaded into a form is ephemeral on Discord: it belongs to no message.
        attachments[stored.id] = { ...attachmentObject(stored), ephemeral: true };
        return stored.id;
      });
      add(customId, { type: COMPONENT.fileUpload, values: ids }, true);
    }
    for (const [customId, values] of Object.entries(options.selects ?? {})) {
      const input = shownInput(shown, customId, SELECT_TYPES, 'select');
      if (input) {
        checkCount(input, customId, values.length, 'value');
        const offered = Array.isArray(input.component.options)
          ? input.component.options.flatMap((option: unknown) =>
              isRecord(option) && typeof option.value === 'string' ? [option.value] : [],
            )
          : undefined;
        const unknown = offered && values.find((value) => !offered.includes(value));
        if (unknown !== undefined) throw new Error(`the select ${customId} offers no option ${unknown}`);
      }
      add(customId, { type: input?.component.type ?? COMPONENT.stringSelect, values }, true);
    }
    for (const [customId, input] of shown ?? []) {
      const given = customId in (options.files ?? {}) || customId in (options.selects ?? {});
      const type = input.component.type;
      if (!given && (type === COMPONENT.fileUpload || SELECT_TYPES.includes(Number(type))) && minimumOf(input.component) > 0)
        throw new Error(`the form requires ${customId}; a member cannot submit it empty`);
    }
    const { record, payload } = this.#base(INTERACTION.modal, options.user, place, this.#appOwners(place, options.user));
    record.name = options.customId;
    payload.data = {
      custom_id: options.customId,
      components: components.sort((a, b) => a.order - b.order).map((entry) => entry.component),
      ...(Object.keys(attachments).length > 0 ? { resolved: { attachments } } : {}),
    };
    return this.#start(record, payload);
  }

  /** The installs through which the app is reachable for `user` at `place`; throws where it is not at all. */
  #appOwners(place: Place, user: User): Record<string, string> {
    const owners = this.#owners(place, user);
    if (Object.keys(owners).length === 0) throw new Error(`the app is not reachable for ${user.username} there`);
    return owners;
  }

  /** The `data` of the last modal shown with this custom id, as the bot sent it. */
  #shownForm(customId: string): Readonly<Record<string, unknown>> | undefined {
    for (const record of [...this.#observation.interactions].reverse()) {
      const shown = record.callbacks.find((callback) => callback.type === CALLBACK.modal && callback.data.custom_id === customId);
      if (shown) return shown.data;
    }
    return undefined;
  }
}

const SELECT_TYPES: readonly number[] = [
  COMPONENT.stringSelect,
  COMPONENT.userSelect,
  COMPONENT.roleSelect,
  COMPONENT.mentionableSelect,
  COMPONENT.channelSelect,
];

interface ShownInput {
  /** Its place in the form, so a submission lists the fields in the form's order. */
  order: number;
  inLabel: boolean;
  component: Readonly<Record<string, unknown>>;
}

/** A shown form's inputs by custom id; undefined when no such form was shown. */
function formInputs(form: Readonly<Record<string, unknown>> | undefined): Map<string, ShownInput> | undefined {
  if (!form) return undefined;
  const inputs = new Map<string, ShownInput>();
  const top = Array.isArray(form.components) ? form.components : [];
  for (const [order, component] of top.entries()) {
    if (!isRecord(component)) continue;
    const children: { inLabel: boolean; child: unknown }[] = Array.isArray(component.components)
      ? component.components.map((child: unknown) => ({ inLabel: false, child }))
      : [{ inLabel: true, child: component.component }];
    for (const { inLabel, child } of children)
      if (isRecord(child) && typeof child.custom_id === 'string') inputs.set(child.custom_id, { order, inLabel, component: child });
  }
  return inputs;
}

function shownInput(
  shown: Map<string, ShownInput> | undefined,
  customId: string,
  types: readonly number[],
  what: string,
): ShownInput | undefined {
  if (!shown) return undefined;
  const input = shown.get(customId);
  if (!input || !types.includes(Number(input.component.type))) throw new Error(`the form shown has no ${what} ${customId}`);
  return input;
}

/** min_values as a member's client applies it: 1 by default, 0 when the field is not required. */
function minimumOf(component: Readonly<Record<string, unknown>>): number {
  if (component.required === false) return 0;
  return typeof component.min_values === 'number' ? component.min_values : 1;
}

function checkCount(input: ShownInput, customId: string, count: number, what: string): void {
  const min = minimumOf(input.component);
  const max = typeof input.component.max_values === 'number' ? input.component.max_values : 1;
  if (count < min || count > max) throw new Error(`${customId} takes ${min}-${max} ${what}s, not ${count}`);
}
