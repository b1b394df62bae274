"""The template language of bench/peers/: deliberately tiny.

    {{name}}                  the value of name (an error if unset)
    {{#name}} ... {{/name}}   the text when name is true
    {{^name}} ... {{/name}}   the text when name is false

Templates hold the configuration of each product; the harness fills in
ports, paths and counts. nginx's own `$variables` pass through untouched.
"""

import re

_SECTION = re.compile(r'\{\{([#^])(\w+)\}\}(.*?)\{\{/\2\}\}', re.S)
_VAR = re.compile(r'\{\{(\w+)\}\}')


def render(text, values):
    """Renders text with values (a dict); raises KeyError for a variable
    the template uses and values lacks."""

    def section(m):
        on = bool(values.get(m.group(2)))
        return m.group(3) if (m.group(1) == '#') == on else ''

    prev = None
    while prev != text:
        prev = text
        text = _SECTION.sub(section, text)

    def var(m):
        name = m.group(1)
        if name not in values:
            raise KeyError('template variable "%s" is not set' % name)
        return str(values[name])

    return _VAR.sub(var, text)
