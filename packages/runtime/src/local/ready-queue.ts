/**
 * The tasks ready to run in LocalScheduler, in BullMQ's order: tasks without a priority first, in
 * the order they became ready (BullMQ's wait list); then tasks with one, lowest number first, and
 * in the order they became ready within a priority (BullMQ's prioritized set).
 */
export class ReadyQueue {
  private fifo: string[] = [];
  private head = 0;
  /** A binary min-heap on (priority, sequence). */
  private readonly heap: { priority: number; sequence: number; id: string }[] = [];
  private sequence = 0;

  get size(): number {
    return this.fifo.length - this.head + this.heap.length;
  }

  push(id: string, priority: number | undefined): void {
    if (priority === undefined) {
      this.fifo.push(id);
      return;
    }
    const heap = this.heap;
    heap.push({ priority, sequence: this.sequence++, id });
    for (let i = heap.length - 1; i > 0;) {
      const parent = (i - 1) >> 1;
      if (!before(heap[i]!, heap[parent]!)) break;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
  }

  /** The next id, or `undefined` when none is ready. */
  shift(): string | undefined {
    if (this.head < this.fifo.length) {
      const id = this.fifo[this.head++]!;
      if (this.head > 1024 && this.head * 2 > this.fifo.length) {
        this.fifo = this.fifo.slice(this.head);
        this.head = 0;
      }
      return id;
    }
    const heap = this.heap;
    const top = heap[0];
    if (!top) return undefined;
    const last = heap.pop()!;
    if (heap.length > 0) {
      heap[0] = last;
      for (let i = 0; ;) {
        const left = 2 * i + 1;
        const right = left + 1;
        let least = i;
        if (left < heap.length && before(heap[left]!, heap[least]!)) least = left;
        if (right < heap.length && before(heap[right]!, heap[least]!)) least = right;
        if (least === i) break;
        [heap[i], heap[least]] = [heap[least]!, heap[i]!];
        i = least;
      }
    }
    return top.id;
  }

  clear(): void {
    this.fifo = [];
    this.head = 0;
    this.heap.length = 0;
  }
}

function before(a: { priority: number; sequence: number }, b: { priority: number; sequence: number }): boolean {
  return a.priority < b.priority || (a.priority === b.priority && a.sequence < b.sequence);
}
