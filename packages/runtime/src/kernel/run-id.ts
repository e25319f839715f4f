import { customAlphabet } from 'nanoid';

/**
 * A new run id: 21 letters and digits (about 125 random bits, nanoid's default strength). Not
 * nanoid's URL alphabet, whose `-` could start an id that a command line then reads as an option.
 */
export const newRunId: () => string = customAlphabet(
  '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz',
  21,
);
