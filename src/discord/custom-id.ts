// A component's or modal's `custom_id` names the command that made it first, so the dispatcher can route
// the press back to that command's module; the rest is that command's own (an action, a task id). State
// lives in the id (or the store), so a button still works after a restart.

const SEPARATOR = ':';

/** `video:extend:<task>` and the like. */
export function customId(command: string, ...parts: string[]): string {
  return [command, ...parts].join(SEPARATOR);
}

/** The command name first, then the parts `customId` joined. */
export function customIdParts(id: string): string[] {
  return id.split(SEPARATOR);
}
