/* The arena's proof-of-work challenge, solved in the background.
 *
 * GET /api/challenge says whether this browser must solve one before its next
 * battle; if so, find a number n such that SHA-256("<token>:<n>") starts with
 * `bits` zero bits. Self-hosted and offline: a plain SHA-256 (works on http://
 * too, where crypto.subtle is missing), run in slices so the page stays responsive.
 */
(function () {
  "use strict";

  const K = new Uint32Array([
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
  ]);
  const W = new Uint32Array(64);

  // SHA-256 of an ASCII string; returns the first 32-bit word (all a leading-zero count needs
  // up to 32 bits).
  function firstWord(text) {
    const bytes = text.length;
    const blocks = ((bytes + 9 + 63) >> 6);
    const words = new Uint32Array(blocks * 16);
    for (let i = 0; i < bytes; i++) words[i >> 2] |= (text.charCodeAt(i) & 0xff) << (24 - 8 * (i & 3));
    words[bytes >> 2] |= 0x80 << (24 - 8 * (bytes & 3));
    words[words.length - 1] = bytes * 8;
    let h0 = 0x6a09e667, h1 = 0xbb67ae85, h2 = 0x3c6ef372, h3 = 0xa54ff53a;
    let h4 = 0x510e527f, h5 = 0x9b05688c, h6 = 0x1f83d9ab, h7 = 0x5be0cd19;
    for (let block = 0; block < blocks; block++) {
      for (let t = 0; t < 16; t++) W[t] = words[block * 16 + t];
      for (let t = 16; t < 64; t++) {
        const x = W[t - 15], y = W[t - 2];
        const s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
        const s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10);
        W[t] = (W[t - 16] + s0 + W[t - 7] + s1) | 0;
      }
      let a = h0, b = h1, c = h2, d = h3, e = h4, f = h5, g = h6, h = h7;
      for (let t = 0; t < 64; t++) {
        const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
        const ch = (e & f) ^ (~e & g);
        const t1 = (h + S1 + ch + K[t] + W[t]) | 0;
        const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
        const maj = (a & b) ^ (a & c) ^ (b & c);
        const t2 = (S0 + maj) | 0;
        h = g; g = f; f = e; e = (d + t1) | 0; d = c; c = b; b = a; a = (t1 + t2) | 0;
      }
      h0 = (h0 + a) | 0; h1 = (h1 + b) | 0; h2 = (h2 + c) | 0; h3 = (h3 + d) | 0;
      h4 = (h4 + e) | 0; h5 = (h5 + f) | 0; h6 = (h6 + g) | 0; h7 = (h7 + h) | 0;
    }
    return h0 >>> 0;
  }

  function solve(token, bits) {
    // bits <= 28 by the server's rule, so the first word decides
    const limit = 2 ** (32 - bits);
    return new Promise((resolve) => {
      let n = 0;
      function slice() {
        const end = n + 20000;
        for (; n < end; n++) {
          if (firstWord(token + ":" + n) < limit) return resolve(String(n));
        }
        setTimeout(slice, 0);
      }
      slice();
    });
  }

  // Resolves to {challenge, solution} to send with the next battle, or null when none is asked.
  async function prepare() {
    const response = await fetch("/api/challenge", { credentials: "same-origin" });
    if (!response.ok) return null;
    const data = await response.json();
    if (!data.required) return null;
    const solution = await solve(data.token, data.bits);
    return { challenge: data.token, solution: solution };
  }

  window.arenaChallenge = { prepare: prepare, solve: solve, firstWord: firstWord };
})();
