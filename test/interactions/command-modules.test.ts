import { ApplicationCommandType, ContextMenuCommandBuilder, SlashCommandBuilder } from 'discord.js';
import { describe, expect, it } from 'vitest';
import { isCommand } from '../../src/interactions/command.ts';
import { loadCommands } from '../../src/interactions/registry.ts';

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
