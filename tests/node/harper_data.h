// Data of Harper's integration tests that more than one suite inserts (HarperFast/harper,
// integrationTests/apiTests/json): the rows Harper's assertions are about, carried over as
// facts, as the requests are.
#pragma once

#include "nlohmann/json.hpp"

namespace cairn::testing::harper {

// json/remarks.json: 11 records {id, length, remarks}.
inline nlohmann::json Remarks() {
  return nlohmann::json::parse(R"json([
{"id":1,"length":238,"remarks":"Beautiful pool home that has all the upgrades you're looking for. 4 Bedroom/2.5+ bath with updated kitchen with granite countertops, stainless steel appliances including a Bosch dishwasher and double ovens. Formal Living room, dining room."},
{"id":2,"length":248,"remarks":"Beautiful pool home that has all the upgrades you're looking for.  4 Bedroom/2.5+ bath with updated kitchen with granite countertops, stainless steel appliances including a Bosch dishwasher and double ovens.  Formal Living room, dining room and stuff."},
{"id":3,"length":788,"remarks":"Beautiful pool home that has all the upgrades you're looking for.  4 Bedroom/2.5+ bath with updated kitchen with granite countertops, stainless steel appliances including a Bosch dishwasher and double ovens.  Formal Living room, dining room & separate family room with vauled ceilings. Family room is wired for speakers. Tile floors in kitchen & b'fast area.  Hardwood floors are found in the family room and 2 bedrooms.  The master bedroom has french doors out to the screened pool area.  The bath has separate vanities with granite tops, remodeled shower with a seat & his and hers closets.  There is a pool and spa.  Both are heated using solar panels, no gas heater.  There is a Soothing waterfall feature that makes this outdoor area perfect for entertaining.  Fenced back yard as well."},
{"id":4,"length":701,"remarks":"This custom built dream home is stunningly gorgeous!  It is a 5+ acres luxury equestrian property with access to Jennings State Forest from your backyard, no need to trailer your horses anywhere for a beautifully scenic peaceful ride.  This amazing home includes impressive Brazilian hardwood floors, plantation shutters throughout, granite countertops, triple tray and wood beam ceilings and so much more.  Builder's touches include 24'' tiles, rounded corner walls, 5'' baseboards, 10 ft. ceilings, in-wall vacuum system and many more unique upgrades.  There are extensive custom touches on this property from the mailbox to the unique 3000 sq. ft. two level 3-stall barn with tons of storage space."},
{"id":5,"length":234,"remarks":"This custom built dream home is stunningly gorgeous!  It is a 5+ acres luxury equestrian property with access to Jennings State Forest from your backyard, no need to trailer your horses anywhere for a beautifully scenic peaceful ride."},
{"id":6,"length":779,"remarks":"*DON'T MISS THIS BEAUTIFUL DAVID WEEKLEY BELMONTE MODEL*ONE OF THE LARGEST LOTS IN CROSSWATER*GREAT FOR OUTDOOR FUN!*LUXURIOUS LIVING!*HIGH TECH HOME*CROWN MOLDING, CUSTOM PLANTATION SHUTTERS, 18'' TILE & CUSTOM WHITE OAK HARDWOOD FLOORING...THRUOUT THE HOME*LARGE OFFICE W/GLASS FRENCH DOORS*FORMAL DINING ROOM W/PICTURE FRAME MOLDING*GOURMET KITCHEN W/42''CUSTOM CABINETRY & GRANITE COUNTERTOPS, STAINLESS STEEL APPLIANCES, & HUGE ISLAND OPEN TO THE GREAT ROOM W/TRAY CEILING & SURROUND SOUND SPEAKERS*MASTER BEDROOM SUITE W/TRAY CEILING W/BEADBOARD INSET AND SHOWER W/OVERHEAD RAINFOREST HEAD*2 MORE BEDROOMS & OPEN ''FLEX'' AREA*COVERED LANAI OVERLOOKING THE HUGE FENCED BACKYARD*3-CAR GARAGE*''NEST'' THERMOSTAT & AT&T HOME SECURITY W/WIFI ACCESS*WATER SOFTENER*LOTS MORE!!!"},
{"id":7,"length":243,"remarks":"*DON'T MISS THIS BEAUTIFUL DAVID WEEKLEY BELMONTE MODEL*ONE OF THE LARGEST LOTS IN CROSSWATER*GREAT FOR OUTDOOR FUN!*LUXURIOUS LIVING!*HIGH TECH HOME*CROWN MOLDING, CUSTOM PLANTATION SHUTTERS, 18'' TILE & CUSTOM WHITE OAK HARDWOOD FLOORING..."},
{"id":8,"length":802,"remarks":"**Spacious & updated 2-story home on large preserve lot nearly 1/2 acre! Concrete block constr. & desirable ICW location near JTB, shopping, dining & the beach! Great split BD flrpln w/soaring ceilings features 4BD + office, upstairs loft & 3 full BA. Beautiful tiled kitchen has granite countertops, island, newer refrigerator, cooktop, oven & convection microwave (2 yrs), breakfast bar & nook. Separate DR, LR & Fam Rm all w/crown molding & wood laminate flrs; FP in Fam Rm. Remodeled BA w/granite countertops & gorgeous travertine tiled showers & flrs. New Roof 6/2014 & New upgraded AC system 10/2015. Huge owner suite w/Jacuzzi tub, sep. shower, 2 walk-in closets & bonus rm w/French doors. Relaxing back porch w/phantom retractable screen overlooks the charming patio & huge stunning backyard!**"},
{"id":9,"length":251,"remarks":"**Spacious & updated 2-story home on large preserve lot nearly 1/2 acre! Concrete block constr. & desirable ICW location near JTB, shopping, dining & the beach! Great split BD flrpln w/soaring ceilings features 4BD + office, upstairs loft & 3 full BA."},
{"id":10,"length":560,"remarks":"Location ... Location ...GOURGEOUS HOME in a Heart of MANDARIN,Next to Loretto Magnet schoolClose to I-295, shopping & entertainment. Gated community! Loaded with upgrades: GRANITE countertops,upgraded kitchen cabs w/crown molding, st steel appl, New carpets,New exterior and interior paint,Rain soft water softner, tile floors, bay windows, addtl loft + sep. Internet center, fireplace, lots of arches& niches, 2 story family room, huge covered porch overlooking, Planing to put the new sod in the front and sides, landscaped backyard and much more! MUST SEE!"},
{"id":11,"length":172,"remarks":"Location ... Location ...GOURGEOUS HOME in a Heart of MANDARIN,Next to Loretto Magnet schoolClose to I-295, shopping & entertainment. Gated community! Loaded with upgrades:"}
])json");
}

// The 11 records "Upsert dog data for conditions search tests" sends (inline in Harper's test).
inline nlohmann::json DogConditions() {
  return nlohmann::json::parse(R"json([
{"id":1,"breed_id":154,"weight_lbs":35,"dog_name":"Penny","age":5,"adorable":true,"owner_id":2,"group":"A","location":"Denver, NC"},
{"id":2,"breed_id":346,"weight_lbs":55,"dog_name":"Harper","age":5,"adorable":true,"owner_id":3,"group":"A","location":"Denver, CO"},
{"id":3,"breed_id":348,"weight_lbs":84,"dog_name":"Alby","age":8,"adorable":true,"owner_id":4,"group":"A","location":"Portland, OR"},
{"id":4,"breed_id":347,"weight_lbs":60,"dog_name":"Billy","age":4,"adorable":true,"owner_id":1,"group":"B","location":"Evergreen, CO"},
{"id":5,"breed_id":348,"weight_lbs":15,"dog_name":"Rose Merry","age":6,"adorable":true,"owner_id":2,"group":"B","location":"Denver, CO"},
{"id":6,"breed_id":351,"weight_lbs":28,"dog_name":"Kato","age":4,"adorable":true,"owner_id":3,"group":"A","location":"Charlotte, NC"},
{"id":7,"breed_id":349,"weight_lbs":35,"dog_name":"Simon","age":1,"adorable":true,"owner_id":4,"group":"C","location":"Denver, CO"},
{"id":8,"breed_id":250,"weight_lbs":55,"dog_name":"Gemma","age":3,"adorable":true,"owner_id":1,"group":"A","location":"Denver, NC"},
{"id":9,"breed_id":104,"weight_lbs":75,"dog_name":"Bode","age":9,"adorable":true,"owner_id":null,"group":"C","location":"Boulder, CO"},
{"id":10,"breed_id":null,"weight_lbs":null,"dog_name":null,"age":7,"adorable":null,"owner_id":null,"group":"D","location":"Boulder, CO"},
{"id":11,"breed_id":null,"weight_lbs":null,"dog_name":null,"age":null,"adorable":null,"owner_id":null,"group":"C","location":"Denver, CO"}
])json");
}

// json/dog.json: 9 records; 9 has no owner_id.
inline nlohmann::json Dogs() {
  return nlohmann::json::parse(R"json([
{"id":1,"breed_id":154,"weight_lbs":35,"dog_name":"Penny","age":5,"adorable":true,"owner_id":2},
{"id":2,"breed_id":346,"weight_lbs":55,"dog_name":"Harper","age":5,"adorable":true,"owner_id":3},
{"id":3,"breed_id":348,"weight_lbs":84,"dog_name":"Alby","age":5,"adorable":true,"owner_id":4},
{"id":4,"breed_id":347,"weight_lbs":60,"dog_name":"Billy","age":4,"adorable":true,"owner_id":1},
{"id":5,"breed_id":348,"weight_lbs":15,"dog_name":"Rose Merry","age":6,"adorable":true,"owner_id":2},
{"id":6,"breed_id":351,"weight_lbs":28,"dog_name":"Kato","age":4,"adorable":true,"owner_id":3},
{"id":7,"breed_id":349,"weight_lbs":35,"dog_name":"Simon","age":1,"adorable":true,"owner_id":4},
{"id":8,"breed_id":250,"weight_lbs":55,"dog_name":"Gemma","age":3,"adorable":true,"owner_id":1},
{"id":9,"breed_id":104,"weight_lbs":75,"dog_name":"Bode","age":8,"adorable":true}
])json");
}

// json/dataBulk.json: 10 records, keyed by `all`.
inline nlohmann::json DataBulk() {
  return nlohmann::json::parse(R"json([
{"all":1,"dog_name":"Penny","owner_name":"Kyle","breed_id":154,"age":5,"weight_lbs":35,"adorable":true},
{"all":2,"dog_name":"Harper","owner_name":"Stephen","breed_id":346,"age":5,"weight_lbs":55,"adorable":true},
{"all":3,"dog_name":"Alby","owner_name":"Kaylan","breed_id":348,"age":5,"weight_lbs":84,"adorable":true},
{"all":4,"dog_name":"Billy","owner_name":"Zach","breed_id":347,"age":4,"weight_lbs":60,"adorable":true},
{"all":5,"dog_name":"Rose Merry","owner_name":"Zach","breed_id":348,"age":6,"weight_lbs":15,"adorable":true},
{"all":6,"dog_name":"Kato","owner_name":"Kyle","breed_id":351,"age":4,"weight_lbs":28,"adorable":true},
{"all":7,"dog_name":"Simon","owner_name":"Fred","breed_id":349,"age":1,"weight_lbs":35,"adorable":true},
{"all":8,"dog_name":"Gemma","owner_name":"Stephen","breed_id":350,"age":3,"weight_lbs":55,"adorable":true},
{"all":9,"dog_name":"Gertrude","owner_name":"Eli","breed_id":158,"age":5,"weight_lbs":70,"adorable":true},
{"all":10,"dog_name":"Big Louie","owner_name":"Eli","breed_id":241,"age":11,"weight_lbs":20,"adorable":true}
])json");
}

}  // namespace cairn::testing::harper
