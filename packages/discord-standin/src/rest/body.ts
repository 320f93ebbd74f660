import type { IncomingMessage } from 'node:http';
import { readBodyWithin } from '../lib/http-body.ts';
import { isRecord } from '../lib/json.ts';
import { RestError } from './errors.ts';

/** Discord refuses a whole request over 25 MiB, whatever the upload limit. */
export const MAX_REQUEST_BYTES = 25 * 1024 * 1024;

export interface ParsedBody {
  json: Readonly<Record<string, unknown>>;
  /** `part` is n of the form field files[n], which the payload's attachments entries refer to. */
  files: { part: number; name: string; contentType: string; bytes: Buffer }[];
}

/** The raw body, refused with 413 / 40005 past Discord's request limit. */
export async function readBody(request: IncomingMessage): Promise<Buffer> {
  const body = await readBodyWithin(request, MAX_REQUEST_BYTES);
  if (!body) throw new RestError(413, 40005, 'Request entity too large');
  return body;
}

/** JSON, or multipart with files[n] parts and a payload_json part, as @discordjs/rest sends them. */
export async function parseBody(request: IncomingMessage): Promise<ParsedBody> {
  const raw = await readBody(request);
  const type = request.headers['content-type'] ?? '';
  if (type.startsWith('multipart/form-data')) {
    const form = await new Request('http://stand-in/', { method: 'POST', headers: { 'content-type': type }, body: raw }).formData();
    const files: ParsedBody['files'] = [];
    let json: Readonly<Record<string, unknown>> = {};
    for (const [name, value] of form.entries()) {
      if (name === 'payload_json' && typeof value === 'string') {
        const parsed: unknown = JSON.parse(value);
        if (isRecord(parsed)) json = parsed;
      } else if (typeof value !== 'string') {
        const part = /^files\[(\d+)\]$/.exec(name)?.[1];
        files.push({
          part: part === undefined ? files.length : Number(part),
          name: value.name,
          contentType: value.type || 'application/octet-stream',
          bytes: Buffer.from(await value.arrayBuffer()),
        });
      }
    }
    return { json, files };
  }
  if (raw.length === 0) return { json: {}, files: [] };
  const parsed: unknown = JSON.parse(raw.toString('utf8'));
  return { json: isRecord(parsed) ? parsed : {}, files: [] };
}
