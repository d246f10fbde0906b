bad_jinja:
  x: {% for %}
