/** A module that exports no flow (only look-alikes): `queueflow --flows` must refuse it. */
export const notAFlow = { name: 'cli-greet', build: 'not a function' };
export default [1, 2, 3];
