# keys from the dev env are disjoint from base: stock Salt renders the saltenvs in the iteration
# order of a Python set (random per master process, PYTHONHASHSEED), so overlapping keys across
# saltenvs would give a non-deterministic result.
dev:
  '*':
    - a_dev
base:
  'misc01':
    - dev_top_names_base
