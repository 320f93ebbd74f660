import { ApplicationCommandType, ContextMenuCommandBuilder, SlashCommandBuilder } from 'discord.js';
import { describe, expect, it } from 'vitest';
import { isCommand } from '../../src/interactions/command.ts';
import { loadCommands, registeredDefinition } from '../../src/interactions/registry.ts';

// A command module is checked before it is trusted: the handler its kind of command needs, and none of
// another kind's, so that a message command without its handler stops the start instead of failing later.

const handler = () => Promise.resolve();
const slash = new SlashCommandBuilder().setName('probe').setDescription('a slash command');
const onMessage = new ContextMenuCommandBuilder().setName('Probe message').setType(ApplicationCommandType.Message);

describe('a command module', () => {
  it('is a slash command with execute, or a message command with messageCommand', () => {
    expect(isCommand({ data: slash, execute: handler })).toBe(true);
    expect(isCommand({ data: onMessage, messageCommand: handler, modal: handler })).toBe(true);
  });

  it('is refused without the handler of its kind, or with the handler of another kind', () => {
    expect(isCommand({ data: onMessage, execute: handler })).toBe(false);
    expect(isCommand({ data: slash, messageCommand: handler })).toBe(false);
    expect(isCommand({ data: slash, execute: handler, messageCommand: handler })).toBe(false);
    expect(isCommand({ data: slash, execute: handler, modal: 'not a function' })).toBe(false);
  });
});

describe('the commands of commands/', () => {
  it("are the slash commands and the message commands of a message's Apps menu, each a checked module", async () => {
    const commands = await loadCommands();
    const kinds = [...commands.values()].map((command) => [
      command.data.name,
      command.data.toJSON().type ?? ApplicationCommandType.ChatInput,
    ]);
    expect(kinds).toEqual([
      ['Animate image', ApplicationCommandType.Message],
      ['config', ApplicationCommandType.ChatInput],
      ['Edit video', ApplicationCommandType.Message],
      ['Extend video', ApplicationCommandType.Message],
      ['usage', ApplicationCommandType.ChatInput],
      ['video', ApplicationCommandType.ChatInput],
      ['voice', ApplicationCommandType.ChatInput],
    ]);
  });
});

describe('where the commands are offered', () => {
  /** Integration types (0 a server's install, 1 a member's own) and contexts (0 a server, 1 the bot's DM, 2 a private channel) of each command as registered. */
  async function registered(userInstalls: boolean): Promise<Record<string, unknown>> {
    const commands = await loadCommands();
    return Object.fromEntries(
      [...commands.values()].map((command) => {
        const { integration_types, contexts } = registeredDefinition(command, userInstalls);
        return [command.data.name, { integration_types, contexts }];
      }),
    );
  }
  const SERVER_ONLY = { integration_types: [0], contexts: [0] };
  const EVERYWHERE = { integration_types: [0, 1], contexts: [0, 1, 2] };

  it('is servers only, for server installs only, while user installs are off (USER_INSTALLS, the default)', async () => {
    expect(Object.values(await registered(false))).toEqual(Array.from({ length: 7 }, () => SERVER_ONLY));
  });

  it("is also a member's own install, anywhere they are, for what works there; /config and /voice stay on servers", async () => {
    expect(await registered(true)).toEqual({
      'Animate image': EVERYWHERE,
      config: SERVER_ONLY,
      'Edit video': EVERYWHERE,
      'Extend video': EVERYWHERE,
      usage: EVERYWHERE,
      video: EVERYWHERE,
      voice: SERVER_ONLY,
    });
  });
});
