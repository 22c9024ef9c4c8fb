// memory_view.js - drawing what a fast-weight memory holds for fwm's web page: the figure-3 grid
// (how well each chained read's query matches what each past word wrote) and the fast-weight
// tensor's slices as heatmaps. Pure drawing on <canvas>; the numbers come from the `trace` method.

/** A msgpack bin of little-endian float32 as a Float32Array (copied: bins may be unaligned). */
export function floats(bin) {
  const bytes = bin instanceof Uint8Array ? bin : new Uint8Array(bin);
  const out = new Float32Array(bytes.byteLength / 4);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let i = 0; i < out.length; i++) out[i] = view.getFloat32(4 * i, true);
  return out;
}

function dot(a, b) {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
}

/** Red for positive, blue for negative, white at 0; x in [-1, 1]. */
function colour(x) {
  const a = Math.max(-1, Math.min(1, x));
  const fade = Math.round(255 * (1 - Math.abs(a)));
  return a >= 0 ? [255, fade, fade] : [fade, fade, 255];
}

/**
 * Figure 3: one row per read, one column per past position; the cell is
 * <k1_t (x) k2_t, query_i (x) key_i> = (k1_t . query_i) (k2_t . key_i), scaled per row.
 * @param {HTMLElement} box  emptied and filled
 * @param {{word: string, k1: Float32Array, k2: Float32Array}[]} history  what each position wrote
 * @param {{query: Float32Array, key: Float32Array, topk: [string, number][]}[]} reads
 */
export function drawReads(box, history, reads) {
  box.textContent = '';
  const cell = 14;
  reads.forEach((read, r) => {
    const scores = history.map((h) => dot(h.k1, read.query) * dot(h.k2, read.key));
    const scale = Math.max(1e-12, ...scores.map(Math.abs));
    const row = document.createElement('div');
    row.className = 'read-row';
    const label = document.createElement('div');
    label.className = 'label';
    const best = read.topk.map(([w, p]) => `${w} ${p.toFixed(2)}`).join(', ');
    label.innerHTML = `<b>read ${r + 1}</b>`;
    label.append(`retrieves: ${best}`);
    const canvas = document.createElement('canvas');
    canvas.className = 'grid-canvas';
    canvas.width = Math.max(1, scores.length) * cell;
    canvas.height = r === reads.length - 1 ? cell + 70 : cell;
    canvas.dataset.read = String(r + 1);
    const g = canvas.getContext('2d');
    scores.forEach((s, t) => {
      const [red, green, blue] = colour(s / scale);
      g.fillStyle = `rgb(${red},${green},${blue})`;
      g.fillRect(t * cell, 0, cell - 1, cell - 1);
    });
    if (r === reads.length - 1) { // the words under the last row, written downwards
      g.fillStyle = '#68707f';
      g.font = '10px system-ui, sans-serif';
      history.forEach((h, t) => {
        g.save();
        g.translate(t * cell + 10, cell + 3);
        g.rotate(Math.PI / 2);
        g.fillText(h.word.slice(0, 11), 0, 0);
        g.restore();
      });
    }
    row.append(label, canvas);
    box.append(row);
  });
}

/**
 * The fast weights F[S][R][T] (T fastest) as S heatmaps of R x T, on one colour scale.
 * @param {HTMLElement} box  emptied and filled
 * @param {Float32Array} F
 * @param {number[]} shape  [S, R, T, N_r]
 */
export function drawSlices(box, F, shape) {
  box.textContent = '';
  const [S, R, T] = shape;
  let scale = 1e-12;
  for (const x of F) scale = Math.max(scale, Math.abs(x));
  const zoom = Math.max(1, Math.min(4, Math.floor(128 / Math.max(R, T))));
  for (let i = 0; i < S; i++) {
    const canvas = document.createElement('canvas');
    canvas.width = T;
    canvas.height = R;
    canvas.style.width = `${T * zoom}px`;
    canvas.style.height = `${R * zoom}px`;
    canvas.title = `F[${i}]: ${R} x ${T}`;
    const g = canvas.getContext('2d');
    const image = g.createImageData(T, R);
    for (let j = 0; j < R; j++) {
      for (let t = 0; t < T; t++) {
        const [red, green, blue] = colour(F[(i * R + j) * T + t] / scale);
        const p = 4 * (j * T + t);
        image.data[p] = red;
        image.data[p + 1] = green;
        image.data[p + 2] = blue;
        image.data[p + 3] = 255;
      }
    }
    g.putImageData(image, 0, 0);
    box.append(canvas);
  }
}
