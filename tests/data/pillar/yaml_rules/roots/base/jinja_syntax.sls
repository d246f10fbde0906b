jinja_syntax:
  x: {% if %}
