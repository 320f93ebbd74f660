import { isRecord } from '../lib/json.ts';
import { COMPONENT } from './components.ts';
import { FieldErrorList, badLength, fieldError, required, tooLong, typeChoices, type FieldErrors, type FieldPath } from './errors.ts';

// A modal (interaction callback type 9) as Discord checks it: a title, one to five top-level
// components (labels wrapping an input, text displays, or the older action rows of a text input), and
// each input's own bounds (README.md, "Forms").

const C = COMPONENT;

export const MODAL_LIMITS = {
  title: 45,
  components: { min: 1, max: 5 },
  customId: 100,
  label: 45,
  labelDescription: 100,
  textInputLength: 4000,
  selectOptions: { min: 1, max: 25 },
  selectValues: 25,
  fileUploadValues: 10,
} as const;

const L = MODAL_LIMITS;
const TOP_LEVEL: readonly number[] = [C.actionRow, C.textDisplay, C.label];
const IN_LABEL: readonly number[] = [
  C.textInput,
  C.stringSelect,
  C.userSelect,
  C.roleSelect,
  C.mentionableSelect,
  C.channelSelect,
  C.fileUpload,
  C.radioGroup,
  C.checkboxGroup,
  C.checkbox,
];
const TEXT_INPUT_STYLES: readonly unknown[] = [1, 2];

function outOfRange(path: FieldPath, min: number, max: number): FieldErrors {
  return fieldError(path, 'NUMBER_TYPE_OUT_OF_RANGE', `Int value should be between ${min} and ${max}.`);
}

/** The errors of a modal's `data`, as Discord's `errors` tree (the caller puts it under `data`); undefined when it passes. */
export function modalErrors(data: Readonly<Record<string, unknown>>): FieldErrors | undefined {
  const found = new FieldErrorList();
  const customIds = new Set<string>();
  const customId = (value: unknown, path: FieldPath) => {
    if (typeof value !== 'string' || value.length === 0) found.add(required(path));
    else if (value.length > L.customId) found.add(tooLong(path, L.customId));
    else if (customIds.has(value))
      found.add(fieldError(path, 'COMPONENT_CUSTOM_ID_DUPLICATED', 'Component custom id cannot be duplicated'));
    else customIds.add(value);
  };
  const text = (value: unknown, path: FieldPath, max: number, needed: boolean) => {
    if (typeof value !== 'string' || value.length === 0) {
      if (needed) found.add(required(path));
    } else if (value.length > max) found.add(tooLong(path, max));
  };
  const count = (value: unknown, path: FieldPath, min: number, max: number) => {
    if (value !== undefined && (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max))
      found.add(outOfRange(path, min, max));
  };

  const input = (component: Readonly<Record<string, unknown>>, path: FieldPath, inLabel: boolean) => {
    customId(component.custom_id, [...path, 'custom_id']);
    switch (component.type) {
      case C.textInput:
        if (!TEXT_INPUT_STYLES.includes(component.style)) found.add(required([...path, 'style']));
        // In an action row the input carries its own label; in a label component the label says it.
        text(component.label, [...path, 'label'], L.label, !inLabel);
        count(component.min_length, [...path, 'min_length'], 0, L.textInputLength);
        count(component.max_length, [...path, 'max_length'], 1, L.textInputLength);
        text(component.value, [...path, 'value'], L.textInputLength, false);
        break;
      case C.stringSelect: {
        const options = Array.isArray(component.options) ? component.options : [];
        if (options.length < L.selectOptions.min || options.length > L.selectOptions.max)
          found.add(badLength([...path, 'options'], L.selectOptions.min, L.selectOptions.max));
        count(component.min_values, [...path, 'min_values'], 0, L.selectValues);
        count(component.max_values, [...path, 'max_values'], 1, L.selectValues);
        break;
      }
      case C.fileUpload: {
        count(component.min_values, [...path, 'min_values'], 0, L.fileUploadValues);
        count(component.max_values, [...path, 'max_values'], 1, L.fileUploadValues);
        const min = typeof component.min_values === 'number' ? component.min_values : 1;
        const max = typeof component.max_values === 'number' ? component.max_values : 1;
        if (min > max) found.add(outOfRange([...path, 'min_values'], 0, max));
        // Discord: min_values must be omitted or at least 1 while the upload is required (the default).
        if (component.required !== false && min === 0) found.add(outOfRange([...path, 'min_values'], 1, L.fileUploadValues));
        break;
      }
      default:
        break;
    }
  };

  text(data.custom_id, ['custom_id'], L.customId, true);
  text(data.title, ['title'], L.title, true);
  const components = Array.isArray(data.components) ? data.components : [];
  if (components.length < L.components.min || components.length > L.components.max)
    found.add(badLength(['components'], L.components.min, L.components.max));
  for (const [index, component] of components.entries()) {
    const path = ['components', index];
    if (!isRecord(component) || typeof component.type !== 'number' || !TOP_LEVEL.includes(component.type)) {
      found.add(typeChoices(path, TOP_LEVEL));
      continue;
    }
    if (component.type === C.textDisplay) {
      text(component.content, [...path, 'content'], L.textInputLength, true);
    } else if (component.type === C.actionRow) {
      // The older form: an action row holding exactly one text input.
      const children = Array.isArray(component.components) ? component.components : [];
      if (children.length !== 1) found.add(badLength([...path, 'components'], 1, 1));
      for (const [childIndex, child] of children.entries()) {
        const childPath = [...path, 'components', childIndex];
        if (!isRecord(child) || child.type !== C.textInput) found.add(typeChoices(childPath, [C.textInput]));
        else input(child, childPath, false);
      }
    } else {
      text(component.label, [...path, 'label'], L.label, true);
      text(component.description, [...path, 'description'], L.labelDescription, false);
      const inner = component.component;
      const innerPath = [...path, 'component'];
      if (!isRecord(inner)) found.add(required(innerPath));
      else if (typeof inner.type !== 'number' || !IN_LABEL.includes(inner.type)) found.add(typeChoices(innerPath, IN_LABEL));
      else input(inner, innerPath, true);
    }
  }
  return found.errors;
}
