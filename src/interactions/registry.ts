import { readdir } from 'node:fs/promises';
import { ApplicationIntegrationType, InteractionContextType, Routes, type REST } from 'discord.js';
import { isCommand, type Command } from './command.ts';

const COMMANDS_DIRECTORY = new URL('../../commands/', import.meta.url);

/** Every `commands/*.ts` module, checked: a broken command file stops the start, loudly. */
export async function loadCommands(directory: URL = COMMANDS_DIRECTORY): Promise<Map<string, Command>> {
  const files = (await readdir(directory)).filter((file) => file.endsWith('.ts')).sort();
  const commands = new Map<string, Command>();
  for (const file of files) {
    const module: unknown = await import(new URL(file, directory).href);
    const command: unknown = typeof module === 'object' && module !== null ? Reflect.get(module, 'default') : undefined;
    if (!isCommand(command)) {
      throw new Error(`commands/${file} must default-export a command: { data, execute, requires?, autocomplete?, button?, modal? }`);
    }
    if (commands.has(command.data.name)) throw new Error(`commands/${file} repeats the command name ${command.data.name}`);
    commands.set(command.data.name, command);
  }
  return commands;
}

/** What a command offers a member's own install: nothing (server installs only), or itself everywhere the member is. */
const SERVER_ONLY = { integration_types: [ApplicationIntegrationType.GuildInstall], contexts: [InteractionContextType.Guild] };
const ALSO_USER_INSTALLS = {
  integration_types: [ApplicationIntegrationType.GuildInstall, ApplicationIntegrationType.UserInstall],
  contexts: [InteractionContextType.Guild, InteractionContextType.BotDM, InteractionContextType.PrivateChannel],
};

/**
 * A command's definition as it is registered: where it may be installed and used. With user installs
 * allowed (USER_INSTALLS=on), a command that works there (`userInstall`) is offered to members' own
 * installs and in DMs and private channels; every other command, and every command with user installs
 * off, to server installs in servers only, so Discord offers a user install nothing of it.
 */
export function registeredDefinition(command: Command, userInstalls: boolean): Record<string, unknown> {
  const places = userInstalls && command.userInstall ? ALSO_USER_INSTALLS : SERVER_ONLY;
  return { ...command.data.toJSON(), ...places };
}

/** Registering on one server (`guildId`) updates at once; global commands take a while to reach every server. */
export async function registerCommands(
  rest: REST,
  applicationId: string,
  commands: readonly Command[],
  guildId: string | undefined,
  userInstalls = false,
): Promise<number> {
  const body = commands.map((command) => registeredDefinition(command, userInstalls));
  await rest.put(guildId ? Routes.applicationGuildCommands(applicationId, guildId) : Routes.applicationCommands(applicationId), { body });
  return body.length;
}
