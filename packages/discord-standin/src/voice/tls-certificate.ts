// A throwaway certificate for the voice websocket: @discordjs/voice always dials `wss://`, so the
// stand-in needs TLS that the bot's process trusts (NODE_EXTRA_CA_CERTS=<certPath> at its start).

import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface SelfSignedCertificate {
  /** PEM file of the certificate, to hand to NODE_EXTRA_CA_CERTS. */
  certPath: string;
  certPem: string;
  keyPem: string;
  /** Deletes the temporary directory holding the files. */
  remove(): Promise<void>;
}

/** Makes a self-signed certificate for 127.0.0.1 with the `openssl` CLI, in a fresh temp directory. */
export async function createSelfSignedCertificate(): Promise<SelfSignedCertificate> {
  const directory = await mkdtemp(join(tmpdir(), 'discord-voice-standin-'));
  const remove = () => rm(directory, { recursive: true, force: true });
  try {
    const certPath = join(directory, 'cert.pem');
    const keyPath = join(directory, 'key.pem');
    // P-256 keys are generated in milliseconds, RSA keys can take a second on a busy machine.
    await run(
      'openssl',
      [
        'req',
        '-x509',
        '-nodes',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-keyout',
        keyPath,
        '-out',
        certPath,
        '-days',
        '2',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
      ],
      { timeout: 15_000 },
    );
    const [certPem, keyPem] = await Promise.all([readFile(certPath, 'utf8'), readFile(keyPath, 'utf8')]);
    return { certPath, certPem, keyPem, remove };
  } catch (error) {
    await remove();
    throw new Error('could not create the voice stand-in certificate with openssl', { cause: error });
  }
}
