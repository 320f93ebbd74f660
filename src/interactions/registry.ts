import { readdir } from 'node:fs/promises';
import { Routes, type REST } from 'discord.js';
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

/** Registering on one server (`guildId`) updates at once; global commands take a while to reach every server. */
export async function registerCommands(
  rest: REST,
  applicationId: string,
  commands: readonly Command[],
  guildId: string | undefined,
): Promise<number> {
  const body = commands.map((command) => command.data.toJSON());
  await rest.put(guildId ? Routes.applicationGuildCommands(applicationId, guildId) : Routes.applicationCommands(applicationId), { body });
  return body.length;
}
