// NODE_EXTRA_CA_CERTS is read once, when a process starts, so a test that runs @discordjs/voice in its
// own process cannot use it for a certificate made during the test. Node 22.19+ can replace the
// default CA list at run time instead; every TLS connection made without an explicit `ca` (the `ws`
// client inside @discordjs/voice included) then trusts it.

import { getCACertificates, setDefaultCACertificates } from 'node:tls';

/** Adds `certPem` to this process's trusted CAs; the returned function restores the previous list. */
export function trustCertificateInThisProcess(certPem: string): () => void {
  const previous = getCACertificates('default');
  setDefaultCACertificates([...previous, certPem]);
  let restored = false;
  return () => {
    if (restored) return;
    restored = true;
    setDefaultCACertificates(previous);
  };
}
