/** The offline game over the whole deck, as the referee records it. */
export const EXPECTED_GAME = `Round 1
  hinter  1: Newton thought about gravity when he saw one drop
  guesser 1: moon ✗
  hinter  2: One a day keeps the doctor away
  guesser 2: apple ✓
  the word was 'apple': solved in 2 turns

Round 2
  hinter  1: Chopin wrote most of his pieces for it
  guesser 1: piano ✓
  the word was 'piano': solved in 1 turn

Round 3
  hinter  1: It destroyed Pompeii
  guesser 1: earthquake ✗
  hinter  2: Etna in Sicily is an active one
  guesser 2: volcano ✓
  the word was 'volcano': solved in 2 turns

Round 4
  hinter  1: It waddles on land and swims fast to catch fish
  guesser 1: penguin ✓
  the word was 'penguin': solved in 1 turn

Round 5
  hinter  1: Its keeper lived on a rocky coast
  guesser 1: anchor ✗
  hinter  2: Sailors watched for its lamp to avoid the rocks
  guesser 2: guitar ✗
  hinter  3: Its lamp turns all night long
  guesser 3: lamp ✗
  the word was 'lighthouse': not guessed, out of turns

Round 6
  hinter  1: Hikers and sailors carry one to find their way
  guesser 1: compass ✓
  the word was 'compass': solved in 1 turn

Game over: 5 of 6 words guessed`;
