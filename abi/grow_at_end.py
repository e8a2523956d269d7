#!/usr/bin/env python3
"""grow_at_end.py OLD.abi NEW.abi - the struct rule abidiff's suppressions
cannot state exactly (scripts/abi-check runs it).

Every struct of the old dump that the new dump still has must keep each
member: same name, same offset, same type; it may only grow at its end
(new members at offsets at or past the old size). Prints each violation
and exits 1 if there is one, 0 otherwise.
"""
import sys
import xml.etree.ElementTree as ET

KINDS = {'type-decl', 'typedef-decl', 'pointer-type-def', 'qualified-type-def',
         'class-decl', 'union-decl', 'enum-decl', 'array-type-def',
         'function-type', 'reference-type-def'}


def load(path):
    root = ET.parse(path).getroot()
    types, structs = {}, {}
    for el in root.iter():
        tag = el.tag
        if tag in KINDS and el.get('id'):
            types.setdefault(el.get('id'), el)
        if (tag == 'class-decl' and el.get('name') and
                el.get('is-declaration-only') != 'yes'):
            members = []
            for dm in el.findall('data-member'):
                var = dm.find('var-decl')
                members.append((var.get('name'),
                                int(dm.get('layout-offset-in-bits', '0')),
                                var.get('type-id')))
            structs.setdefault(el.get('name'),
                               (int(el.get('size-in-bits', '0')), members))
    return types, structs


def name_of(types, tid, depth=0):
    """A type's spelling, independent of the dump's type ids."""
    el = types.get(tid)
    if el is None or depth > 8:
        return '?'
    tag = el.tag
    if tag == 'pointer-type-def':
        return name_of(types, el.get('type-id'), depth + 1) + '*'
    if tag == 'reference-type-def':
        return name_of(types, el.get('type-id'), depth + 1) + '&'
    if tag == 'qualified-type-def':
        q = ' '.join(k for k in ('const', 'volatile') if el.get(k) == 'yes')
        return q + ' ' + name_of(types, el.get('type-id'), depth + 1)
    if tag == 'array-type-def':
        return (name_of(types, el.get('element-type-id'), depth + 1) +
                '[%s]' % el.get('size-in-bits', ''))
    if tag == 'function-type':
        parms = [name_of(types, p.get('type-id'), depth + 1)
                 for p in el.findall('parameter')]
        ret = el.find('return')
        r = name_of(types, ret.get('type-id'), depth + 1) if ret is not None \
            else 'void'
        return '%s(%s)' % (r, ', '.join(parms))
    return el.get('name', '?')


def main():
    old_types, old = load(sys.argv[1])
    new_types, new = load(sys.argv[2])
    bad = 0
    for name, (old_size, old_members) in sorted(old.items()):
        if name not in new:
            continue  # a struct no longer reached is abidiff's to report
        new_size, new_members = new[name]
        have = {m[0]: m for m in new_members}
        for mname, off, tid in old_members:
            m = have.get(mname)
            what = None
            if m is None:
                what = 'removed'
            elif m[1] != off:
                what = 'moved from bit %d to bit %d' % (off, m[1])
            elif name_of(old_types, tid) != name_of(new_types, m[2]):
                what = 'retyped from %s to %s' % (name_of(old_types, tid),
                                                  name_of(new_types, m[2]))
            if what:
                print('struct %s: member %s %s' % (name, mname, what))
                bad = 1
        old_names = {m[0] for m in old_members}
        for mname, off, _ in new_members:
            if mname not in old_names and off < old_size:
                print('struct %s: member %s inserted at bit %d, inside the '
                      'old size of %d bits (grow only at the end)'
                      % (name, mname, off, old_size))
                bad = 1
        if new_size < old_size:
            print('struct %s: shrank from %d to %d bits'
                  % (name, old_size, new_size))
            bad = 1
    return bad


if __name__ == '__main__':
    sys.exit(main())
