// index.d.ts and the module agree: every exported class and every method the types declare
// exists at run time, and every public method at run time is declared. (tsc --strict over the
// tests and the example checks how they are used.)
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { test } from 'node:test';

import ts from 'typescript';

const require = createRequire(import.meta.url);
/** @type {Record<string, any>} */
const api = require('objstore-db');
const declarations = fs.readFileSync(require.resolve('objstore-db/package.json').replace('package.json', 'index.d.ts'), 'utf8');

/** The declared classes: name -> {methods, statics} (constructors and private members aside). */
function declaredClasses() {
  const source = ts.createSourceFile('index.d.ts', declarations, ts.ScriptTarget.Latest, true);
  /** @type {Map<string, {methods: Set<string>, statics: Set<string>}>} */
  const classes = new Map();
  for (const statement of source.statements) {
    if (!ts.isClassDeclaration(statement) || !statement.name) continue;
    const members = { methods: new Set(), statics: new Set() };
    for (const member of statement.members) {
      if (!member.name || ts.isConstructorDeclaration(member)) continue;
      const modifiers = ts.canHaveModifiers(member) ? ts.getModifiers(member) || [] : [];
      if (modifiers.some((m) => m.kind === ts.SyntaxKind.PrivateKeyword)) continue;
      const name = ts.isComputedPropertyName(member.name) ? member.name.getText(source) : member.name.getText(source);
      const isStatic = modifiers.some((m) => m.kind === ts.SyntaxKind.StaticKeyword);
      if (ts.isMethodDeclaration(member)) (isStatic ? members.statics : members.methods).add(name);
    }
    classes.set(statement.name.text, members);
  }
  return classes;
}

/**
 * The public methods of a class at run time, up to (not including) Object.
 * @param {Function} cls
 */
function runtimeMethods(cls) {
  const names = new Set();
  for (let proto = cls.prototype; proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
    for (const name of Object.getOwnPropertyNames(proto)) {
      const descriptor = Object.getOwnPropertyDescriptor(proto, name);
      if (name === 'constructor' || name.startsWith('_') || !descriptor || typeof descriptor.value !== 'function') continue;
      names.add(name);
    }
    for (const symbol of Object.getOwnPropertySymbols(proto)) if (symbol === Symbol.asyncIterator) names.add('[Symbol.asyncIterator]');
  }
  return names;
}

test('every declared class is exported, with the same methods at run time', () => {
  const classes = declaredClasses();
  for (const [name, declared] of classes) {
    if (name === 'Operations') continue; // a base class, not exported on its own
    assert.equal(typeof api[name], 'function', `index.d.ts declares ${name}; the module does not export it`);
    const present = runtimeMethods(api[name]);
    const inherited = name === 'Storage' || name === 'Transaction' ? classes.get('Operations')?.methods ?? new Set() : new Set();
    const expected = new Set([...declared.methods, ...inherited]);
    assert.deepEqual([...present].sort(), [...expected].sort(), `methods of ${name}`);
    const statics = Object.getOwnPropertyNames(api[name]).filter((n) => typeof api[name][n] === 'function' && !['length', 'name', 'prototype'].includes(n));
    assert.deepEqual(statics.sort(), [...declared.statics].sort(), `static methods of ${name}`);
  }
});

test('every runtime export is declared', () => {
  for (const name of Object.keys(api)) {
    assert.match(declarations, new RegExp(`export (class|const|function) ${name}\\b`), `${name} is exported but not declared in index.d.ts`);
  }
});

test("ObjstoreError's codes in index.d.ts are the library's table of error codes", () => {
  const native = require('../native.js');
  const source = ts.createSourceFile('index.d.ts', declarations, ts.ScriptTarget.Latest, true);
  /** @type {string[]} */
  const declared = [];
  source.forEachChild(function visit(node) {
    if (ts.isPropertySignature(node) && node.name.getText(source) === 'code' && node.type && ts.isUnionTypeNode(node.type)) {
      for (const member of node.type.types) declared.push(member.getText(source).replace(/'/g, ''));
    }
    node.forEachChild(visit);
  });
  assert.deepEqual([...declared].sort(), [...native.errorCodes()].sort());
  assert.equal(declared.length, 15);
});
