base:
  "*":
    - {% if %}
